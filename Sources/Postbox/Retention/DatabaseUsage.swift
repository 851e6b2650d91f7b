import Foundation

/// Where the bytes of a Postbox file go: per table, per peer, free pages and the WAL.
public struct DatabaseUsage: Sendable {
    /// How per-table figures were obtained.
    public enum Source: String, Sendable {
        /// SQLite's `dbstat` virtual table: real pages, headers and slack included.
        case dbstat
        /// Key and value bytes counted row by row (this SQLite has no `dbstat`): a lower bound.
        case estimate
        /// A server engine's own figures (`ValueBoxMaintenance.usage`): `bytes` on its disk,
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

        public init(name: String, sqliteName: String, pages: Int64, bytes: Int64, payload: Int64, rows: Int64) {
            self.name = name
            self.sqliteName = sqliteName
            self.pages = pages
            self.bytes = bytes
            self.payload = payload
            self.rows = rows
        }
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
            try valueBox.beginRead()
            defer { valueBox.rollback() }
            let usage = try valueBox.usage()
            let tables = usage.tables.map { table -> DatabaseUsage.TableUsage in
                var named = table
                named.name = names[table.sqliteName] ?? table.sqliteName
                return named
            }
            return DatabaseUsage(
                path: path, source: usage.source, pageSize: usage.pageSize, pageCount: usage.pageCount, freePages: usage.freePages,
                fileBytes: usage.fileBytes, walBytes: usage.walBytes, tables: tables.sorted { $0.bytes > $1.bytes },
                peers: perPeer ? try Self.peerUsage(valueBox) : [])
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
    /// rows (`ValueBoxMaintenance.measuredBytes`): what a size limit bounds there.
    public func databaseBytes() throws -> Int64 {
        try queue.sync { try valueBox.measuredBytes() }
    }

    /// Free pages in the file.
    public func freePageCount() throws -> Int64 { try queue.sync { try valueBox.freePageCount() } }

    /// Returns up to `pages` free pages to the file system in one short write transaction of its
    /// own (incremental auto-vacuum). Returns the pages released.
    public func reclaimFreePages(_ pages: Int) throws -> Int64 {
        if isReadOnly { throw PostboxError.readOnly(path: path) }
        return try queue.sync { try valueBox.incrementalVacuum(pages: pages) }
    }

    /// Copies the WAL into the database file: `truncate` also empties the WAL file, waiting at
    /// most `maxWaitMilliseconds` for readers (else it reports busy and leaves the WAL to the
    /// next checkpoint).
    @discardableResult
    public func checkpointWAL(truncate: Bool, maxWaitMilliseconds: Int32 = 250) throws -> ValueBoxCheckpoint {
        try queue.sync { try valueBox.walCheckpoint(truncate: truncate, maxWaitMilliseconds: maxWaitMilliseconds) }
    }

    /// Caps the WAL file at `bytes` after each checkpoint of this connection.
    public func limitWALSize(_ bytes: Int64) throws {
        try queue.sync { try valueBox.setJournalSizeLimit(bytes) }
    }
}

extension Postbox {
    /// Bytes per page of the file.
    public func pageSizeBytes() throws -> Int64 { try queue.sync { try valueBox.pageSize() } }
}
