import Foundation
import Postbox

/// `jobrun stats --database`: one account's Postbox usage as lines for people and as JSON.
public enum DatabaseUsageReport {
    public static func lines(_ u: DatabaseUsage, account: Int64, top: Int) -> [String] {
        func pad(_ s: String, _ n: Int) -> String { s.padding(toLength: max(n, s.count), withPad: " ", startingAt: 0) }
        var out: [String]
        switch u.source {
        case .server:
            out = [
                "account \(account): live rows \(ByteSize.human(u.usedBytes)), on the server \(ByteSize.human(u.fileBytes)) with indexes and space kept for reuse (\(u.path))",
                "  by table (the server's figures: on disk, live rows):",
            ]
        case .dbstat, .estimate:
            out = [
                "account \(account): database \(ByteSize.human(u.fileBytes)) + WAL \(ByteSize.human(u.walBytes)) (\(u.path))",
                "  pages: \(u.pageCount) × \(u.pageSize) B, \(u.freePages) free (\(ByteSize.human(u.freeBytes)) reclaimable)",
                "  by table (\(u.source == .dbstat ? "dbstat" : "estimate: key and value bytes, no page overhead")):",
            ]
        }
        for t in u.tables {
            let payload = u.source == .server ? "live" : "payload"
            out.append("    \(pad(t.name, 28)) \(pad(ByteSize.human(t.bytes), 10)) \(t.rows) rows, \(payload) \(ByteSize.human(t.payload))")
        }
        out.append("  by peer (messages and their id index; top \(top)):")
        for p in u.peers.prefix(top) {
            out.append("    \(pad(String(p.peer.rawValue), 12)) \(pad(ByteSize.human(p.bytes), 10)) \(p.messages) messages")
        }
        return out
    }

    public static func json(_ u: DatabaseUsage, account: Int64, top: Int) -> LogValue {
        .object([
            "account": .int(account), "path": .string(u.path), "source": .string(u.source.rawValue),
            "file_bytes": .int(u.fileBytes), "wal_bytes": .int(u.walBytes), "page_size": .int(u.pageSize),
            "pages": .int(u.pageCount), "free_pages": .int(u.freePages), "free_bytes": .int(u.freeBytes),
            "by_table": .array(
                u.tables.map {
                    .object([
                        "table": .string($0.name), "sqlite_name": .string($0.sqliteName), "bytes": .int($0.bytes),
                        "pages": .int($0.pages), "payload": .int($0.payload), "rows": .int($0.rows),
                    ])
                }),
            "by_peer": .array(u.peers.prefix(top).map { .object(["peer": .int($0.peer.rawValue), "messages": .int($0.messages), "bytes": .int($0.bytes)]) }),
        ])
    }
}
