import Foundation

/// Where the rewrite of legacy message rows stands (kept in the metadata table).
enum MessageRecordCursor: Equatable {
    case fromStart
    /// Every row up to and including this message key has been looked at.
    case after(ValueBoxKey)
}

/// How an opening `Postbox` rewrites message rows written before `MessageRecord`'s compact
/// layout: in batches, each its own write transaction that rewrites up to `batchSize` rows and
/// moves the cursor kept in the metadata table past them.
///
/// Why batches and not one transaction: readers take either layout, row by row, so a store half
/// rewritten is a valid store. A kill midway loses at most the open batch (SQLite rolls it
/// back, cursor included), and the next opener resumes at the cursor; a row rewritten twice is
/// the same row. One transaction over millions of rows would instead hold the write lock for
/// the whole rewrite (other processes' writers waiting past their busy timeout) and grow the
/// WAL by the size of the table. A legacy row that does not decode is left as it is: reading it
/// still fails with its error, nothing is lost.
public struct MessageRecordConversion: Sendable {
    public var batchSize: Int
    /// Called inside each batch's write transaction once its rows are rewritten, before the
    /// commit, with the number of batches committed before it (crash tests stall here).
    public var beforeCommit: (@Sendable (Int) -> Void)?

    public init(batchSize: Int = 5_000, beforeCommit: (@Sendable (Int) -> Void)? = nil) {
        self.batchSize = batchSize
        self.beforeCommit = beforeCommit
    }
}

extension MessageHistoryTable {
    /// Rewrites the legacy rows among the next `limit` message rows after `cursor` in the
    /// compact layout. Returns the rows rewritten and the next cursor (nil: no row left).
    func convertLegacyRows(after cursor: MessageRecordCursor, limit: Int) throws -> (converted: Int, next: MessageRecordCursor?) {
        try checkWrite()
        var range = ValueBoxRange.all
        if case .after(let last) = cursor {
            range.lower = last
            range.lowerInclusive = false
        }
        // Collected first, written after: never write under a running scan.
        var rewritten: [(ValueBoxKey, Data)] = []
        var visited = 0
        var lastKey: ValueBoxKey?
        let encoder = PostboxEncoder(capacity: 256)
        try valueBox.range(table, range, limit: limit) { key, value in
            visited += 1
            lastKey = key
            let compact = value.withUnsafeBytes { buffer -> Data? in
                guard !MessageRecord.isCompact(buffer) else { return nil }
                encoder.reset()
                do { try MessageRecord.convertLegacy(buffer, into: encoder) } catch { return nil }
                return encoder.makeData()
            }
            if let compact { rewritten.append((key, compact)) }
            return true
        }
        for (key, value) in rewritten { try valueBox.set(table, key: key, value: value) }
        return (rewritten.count, visited == limit ? lastKey.map { .after($0) } : nil)
    }

    /// Whether the table holds any row (a store that may hold legacy rows).
    func hasRows() throws -> Bool {
        var any = false
        try valueBox.rangeKeys(table, .all, limit: 1) { _ in
            any = true
            return false
        }
        return any
    }
}

extension Postbox {
    /// Rewrites legacy message rows batch by batch until none is left (see
    /// `MessageRecordConversion`). Runs on the store's queue. Returns the rows rewritten.
    func convertLegacyMessageRecords(_ options: MessageRecordConversion) throws -> Int {
        var total = 0
        var batches = 0
        while true {
            let (converted, done) = try runWrite { tx -> (Int, Bool) in
                // Re-read under the write lock: another process may be converting too.
                guard let cursor = try tx.metadata.messageRecordCursor() else { return (0, true) }
                let (converted, next) = try tx.messages.convertLegacyRows(after: cursor, limit: max(1, options.batchSize))
                try tx.metadata.setMessageRecordCursor(next)
                options.beforeCommit?(batches)
                return (converted, next == nil)
            }
            total += converted
            batches += 1
            if done { return total }
        }
    }
}
