import Foundation

/// Where the bytes of a Postbox file go: per table, per peer, free pages and the WAL.
public struct DatabaseUsage: Sendable {
    /// How per-table figures were obtained.
    public enum Source: String, Sendable {
        /// SQLite's `dbstat` virtual table: real pages, headers and slack included.
        case dbstat
        /// Key and value bytes counted row by row (this SQLite has no `dbstat`): a lower bound.
        case estimate
        /// A server engine's own figures (`ValueBoxSpaceMeasuring`): `bytes` on its disk,
        /// `payload` the live rows; no pages, free pages or WAL of a file.
        case server
    }

    public struct TableUsage: Sendable {
        /// The Postbox table (`messages`, `messageIdIndex`, …) or SQLite's own b-tree name.
        public var name: String
        /// The SQLite b-tree (`t2`, `sqlite_schema`, …).
        public var sqliteName: String
        public var pages: Int64
        public var bytes: Int64
        /// Key and value bytes stored.
        public var payload: Int64
        public var rows: Int64
    }

    public struct PeerUsage: Sendable {
        public var peer: PeerId
        public var messages: Int64
        /// Bytes of the peer's message rows and their id index entries (keys and values).
        public var bytes: Int64
    }

    public var path: String
    public var source: Source
    public var pageSize: Int64
    public var pageCount: Int64
    public var freePages: Int64
    /// The database file and its WAL as they are on disk now.
    public var fileBytes: Int64
    public var walBytes: Int64
    /// Largest first.
    public var tables: [TableUsage]
    /// Largest first (empty unless asked for).
    public var peers: [PeerUsage]

    /// Bytes of the file that hold data (pages in use).
    public var usedBytes: Int64 { (pageCount - freePages) * pageSize }
    public var freeBytes: Int64 { freePages * pageSize }
}

extension Postbox {
    /// How the file's bytes are spent: per table from `dbstat` (or a row-by-row estimate where
    /// SQLite lacks it), per peer from the message rows (`perPeer`), free pages and WAL size.
    /// Reads the whole file; runs in a read transaction, so it never blocks a writer.
    public func databaseUsage(perPeer: Bool = true) throws -> DatabaseUsage {
        try queue.sync {
            let names = Dictionary(uniqueKeysWithValues: PostboxTableId.allCases.map { ("t\($0.rawValue)", "\($0)") })
            if sqliteValueBox == nil, let server = valueBox as? any ValueBoxSpaceMeasuring {
                try valueBox.beginRead()
                defer { valueBox.rollback() }
                let tables = try server.tableSpace().map {
                    DatabaseUsage.TableUsage(
                        name: names[$0.name] ?? $0.name, sqliteName: $0.name, pages: 0, bytes: $0.diskBytes, payload: $0.liveBytes, rows: $0.rows)
                }
                return DatabaseUsage(
                    path: path, source: .server, pageSize: 1, pageCount: tables.reduce(0) { $0 + $1.payload }, freePages: 0,
                    fileBytes: tables.reduce(0) { $0 + $1.bytes }, walBytes: 0, tables: tables.sorted { $0.bytes > $1.bytes },
                    peers: perPeer ? try Self.peerUsage(valueBox) : [])
            }
            let vb = try sqliteBox("database usage")
            try vb.beginRead()
            defer { vb.rollback() }
            var tables: [DatabaseUsage.TableUsage] = []
            let source: DatabaseUsage.Source
            if let space = try vb.tableSpace() {
                source = .dbstat
                for s in space {
                    tables.append(.init(name: names[s.name] ?? s.name, sqliteName: s.name, pages: s.pages, bytes: s.bytes, payload: s.payload, rows: s.rows))
                }
            } else {
                source = .estimate
                for id in PostboxTableId.allCases {
                    let (rows, bytes) = try vb.estimatedPayload(id.table)
                    if rows > 0 { tables.append(.init(name: "\(id)", sqliteName: "t\(id.rawValue)", pages: 0, bytes: bytes, payload: bytes, rows: rows)) }
                }
            }
            tables.sort { $0.bytes > $1.bytes }
            return DatabaseUsage(
                path: path, source: source, pageSize: try vb.pageSize(), pageCount: try vb.pageCount(),
                freePages: try vb.freePageCount(), fileBytes: fileSize() - vb.walFileBytes(), walBytes: vb.walFileBytes(),
                tables: tables, peers: perPeer ? try Self.peerUsage(vb) : [])
        }
    }

    /// Messages and bytes per peer from the message rows, largest first (inside a read).
    private static func peerUsage(_ box: any ValueBox) throws -> [DatabaseUsage.PeerUsage] {
        var peers: [PeerId: DatabaseUsage.PeerUsage] = [:]
        try box.range(PostboxTableId.messages.table, .all, limit: .max) { key, value in
            let peer = PeerId(key.getInt64(0))
            peers[peer, default: .init(peer: peer, messages: 0, bytes: 0)].messages += 1
            peers[peer, default: .init(peer: peer, messages: 0, bytes: 0)].bytes += Int64(key.length + value.count + 20)
            return true
        }
        return peers.values.sorted { $0.bytes != $1.bytes ? $0.bytes > $1.bytes : $0.peer < $1.peer }
    }

    /// Bytes of the database in pages (free ones included), whatever the WAL still holds: the
    /// size the file has once the WAL is checkpointed. On a server engine, the bytes of the live
    /// rows (`ValueBoxSpaceMeasuring`): what a size limit bounds there.
    public func databaseBytes() throws -> Int64 {
        try queue.sync {
            if let vb = sqliteValueBox { return try vb.pageCount() * vb.pageSize() }
            return try (valueBox as? any ValueBoxSpaceMeasuring)?.liveBytes() ?? 0
        }
    }

    /// Free pages in the file.
    public func freePageCount() throws -> Int64 { try queue.sync { try sqliteValueBox?.freePageCount() ?? 0 } }

    /// Returns up to `pages` free pages to the file system in one short write transaction of its
    /// own (incremental auto-vacuum). Returns the pages released.
    public func reclaimFreePages(_ pages: Int) throws -> Int64 {
        if isReadOnly { throw PostboxError.readOnly(path: path) }
        return try queue.sync { try sqliteValueBox?.incrementalVacuum(pages: pages) ?? 0 }
    }

    /// Copies the WAL into the database file: `truncate` also empties the WAL file, waiting at
    /// most `maxWaitMilliseconds` for readers (else it reports busy and leaves the WAL to the
    /// next checkpoint).
    @discardableResult
    public func checkpointWAL(truncate: Bool, maxWaitMilliseconds: Int32 = 250) throws -> SqliteValueBox.CheckpointResult {
        try queue.sync {
            try sqliteValueBox?.walCheckpoint(truncate: truncate, maxWaitMilliseconds: maxWaitMilliseconds)
                ?? SqliteValueBox.CheckpointResult(busy: false, logFrames: 0, checkpointedFrames: 0)
        }
    }

    /// Caps the WAL file at `bytes` after each checkpoint of this connection.
    public func limitWALSize(_ bytes: Int64) throws {
        try queue.sync { try sqliteValueBox?.setJournalSizeLimit(bytes) }
    }
}

extension Postbox {
    /// Bytes per page of the file.
    public func pageSizeBytes() throws -> Int64 { try queue.sync { try sqliteValueBox?.pageSize() ?? 1 } }
}
