import CSQLite
import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `ValueBox` on SQLite: one table per `ValueBoxTable` (`t<id>`), WAL, cached prepared
/// statements, a busy timeout and `BEGIN IMMEDIATE` so several processes can write one file.
///
/// Not thread-safe: confine an instance to one thread or serial queue (Postbox does).
public final class SqliteValueBox: ValueBox {
    /// How much durability commits buy. `.normal` in WAL mode survives a process crash (SIGKILL)
    /// with every committed transaction present; only a power loss may drop the last few commits,
    /// never corrupting the file. `.full` also survives power loss at ~8× the cost per commit.
    public enum Synchronous: String, Sendable { case off = "OFF", normal = "NORMAL", full = "FULL" }

    public struct Options: Sendable {
        public var readOnly: Bool
        public var synchronous: Synchronous
        /// How long a writer waits for another process's write lock before failing.
        public var busyTimeoutMilliseconds: Int32
        /// SQLite page cache size in KiB (`SqliteValueBox.pageCacheKiB` unless chosen).
        public var cacheSizeKiB: Int
        /// Read-only without the WAL's shared-memory file (`immutable=1`): only for a file
        /// nobody can be writing, e.g. on a read-only mount. It reads the database file alone, so
        /// it is refused (`walUnreadable`) while a `-wal` file holds commits.
        public var immutable = false
        /// The key of an encrypted store (SQLCipher 4's format, see `docs/storage-format.md`),
        /// or nil for a store in clear. A new file opened with a key is created encrypted.
        public var key: StoreKey?
        /// Accept store files writable by group or others or owned by another user (the
        /// operator's explicit choice); links, FIFOs, devices and hard-linked files are refused
        /// regardless.
        public var allowInsecureFiles = false
        public init(
            readOnly: Bool = false, synchronous: Synchronous = .normal, busyTimeoutMilliseconds: Int32 = 60_000, cacheSizeKiB: Int = pageCacheKiB,
            key: StoreKey? = nil
        ) {
            self.readOnly = readOnly
            self.synchronous = synchronous
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.cacheSizeKiB = cacheSizeKiB
            self.key = key
        }
    }

    /// The page cache of a store's connection (`PRAGMA cache_size`), in KiB, the same for a
    /// store in clear and an encrypted one: 64 MiB, the whole of a store of about 400,000
    /// messages. SQLite allocates the cache's pages as they are read, so a short run that reads
    /// a few pages holds no more memory than they take. A page read from the file costs an
    /// encrypted store an HMAC-SHA512 check and an AES-256-CBC decryption (about 4 µs a page
    /// here) where a store in clear copies it from the operating system's cache; a page in this
    /// cache costs neither, so a working set that fits reads as fast from an encrypted store as
    /// from a plain one (`docs/performance.md`, "Encrypted stores").
    public static let pageCacheKiB = 64 * 1024

    public let path: String
    public let options: Options
    private(set) var db: OpaquePointer?
    /// What the VFS knows about this connection (its key, why a file operation failed).
    private var connection: StoreConnection?
    private var knownTables = Set<Int32>()
    private var statements: [String: OpaquePointer] = [:]
    /// Point reads, writes and deletes by kind, then table: each is run millions of times (history
    /// retention's deletes among them), and finding them in `statements` would format and hash
    /// the SQL text every time.
    private var pointStatements = [[Int32: OpaquePointer]](repeating: [:], count: PointStatement.allCases.count)
    /// Transaction control, prepared once: a single-row transaction runs four of these, and
    /// finding them in `statements` hashed the SQL text each time.
    private enum Control: Int, CaseIterable {
        case beginWrite, beginRead, commit, rollback, dataVersion
        var sql: String {
            switch self {
            case .beginWrite: return "BEGIN IMMEDIATE"
            case .beginRead: return "BEGIN DEFERRED"
            case .commit: return "COMMIT"
            case .rollback: return "ROLLBACK"
            case .dataVersion: return "PRAGMA data_version"
            }
        }
    }
    private var controlStatements = [OpaquePointer?](repeating: nil, count: Control.allCases.count)
    private enum PointStatement: Int, CaseIterable {
        case get, set, remove
        func sql(_ table: Int32) -> String {
            switch self {
            case .get: return "SELECT value FROM t\(table) WHERE key=?"
            case .set: return "INSERT OR REPLACE INTO t\(table) (key, value) VALUES (?, ?)"
            case .remove: return "DELETE FROM t\(table) WHERE key=?"
            }
        }
    }
    private var inTransaction = false
    /// Tables created by the open transaction: a rollback un-creates them.
    private var createdInTransaction = Set<Int32>()
    /// `sqlite3_total_changes64` when the WAL was last synced: changes beyond it are committed
    /// but not yet durable.
    private var changesAtLastSync: Int64 = 0

    /// Opens (creating if needed, unless read-only) the database at `path`. The directory is
    /// created 0700 and the file 0600. A file that is not SQLite is refused with an error naming it.
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        // Plain system calls on this path: every cron invocation opens the stores.
        let dir = (path as NSString).deletingLastPathComponent
        var st = stat()
        if !options.readOnly && !dir.isEmpty && stat(dir, &st) != 0 {
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let policy = ConfinementPolicy(allowInsecure: options.allowInsecureFiles)
        let format = try Self.fileFormat(path: path, policy: policy)
        switch format {
        case .foreign: throw PostboxError.notADatabase(path: path)
        case .plain: if options.key != nil { throw PostboxError.notEncrypted(path: path) }
        case .encrypted:
            guard let key = options.key else { throw PostboxError.keyRequired(path: path) }
            try Self.checkKey(key, path: path, policy: policy)
        case .none: break
        }
        if options.readOnly && options.immutable && stat(path + "-wal", &st) == 0 && st.st_size > 0 {
            throw PostboxError.walUnreadable(path: path)
        }
        if !options.readOnly, let fd = try StoreFile.open(path, .readWriteCreating, policy: policy) { Glibc.close(fd) }
        guard StoreVFS.registered else { throw PostboxError.sqlite(path: path, code: SQLITE_ERROR, message: "cannot register the store's VFS") }
        let connection = StoreConnection.make(path: path, key: options.key, policy: policy)
        self.connection = connection
        var handle: OpaquePointer?
        let flags = options.readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let uri = "file:\(Self.uriEscaped(path))?\(StoreVFS.connectionParameter)=\(connection.id)\(options.readOnly && options.immutable ? "&immutable=1" : "")"
        let rc = sqlite3_open_v2(uri, &handle, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, StoreVFS.name)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            connection.release()
            throw connection.takeFailure() ?? PostboxError.sqlite(path: path, code: rc, message: message)
        }
        self.db = handle
        sqlite3_busy_timeout(handle, options.busyTimeoutMilliseconds)
        do {
            // Reading the schema (here, the table names) is what makes SQLite notice a damaged or
            // foreign file.
            if options.key != nil && format == .none && !options.readOnly {
                // SQLCipher's page layout, fixed before the first page is written.
                var reserve = Int32(PageCipher.reserveSize)
                sqlite3_file_control(handle, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve)
                try exec("PRAGMA page_size=\(PageCipher.pageSize)")
                // The first page is written before the switch to WAL, which journals it: in
                // memory, so no page reaches a rollback journal on disk in clear.
                try exec("PRAGMA journal_mode=MEMORY")
            }
            let names = try tableNames()
            if !options.readOnly {
                // auto_vacuum only takes effect before the first table exists: new files get
                // INCREMENTAL so `compact()` can return free pages to the file system.
                if names.isEmpty { try exec("PRAGMA auto_vacuum=INCREMENTAL") }
                try exec("PRAGMA journal_mode=WAL")
                // The `-wal` and `-shm` files outlive the connection; see `close()`.
                var persist: Int32 = 1
                sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
            }
            try exec("PRAGMA synchronous=\(options.synchronous.rawValue); PRAGMA cache_size=-\(options.cacheSizeKiB); PRAGMA temp_store=MEMORY")
            for name in names where name.hasPrefix("t") {
                if let id = Int32(name.dropFirst()) { knownTables.insert(id) }
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Finalizes statements and closes the connection. Further use throws.
    ///
    /// The `-wal` and `-shm` files outlive the connection, so a store is opened and closed
    /// without creating and deleting two files each time (on ext4, allocating and freeing
    /// inodes; a cron run opens two stores). What the last connection to close does with the
    /// WAL depends on its size:
    /// - up to `walKeptAtCloseBytes`, the WAL is left in place, committed frames and all, and
    ///   synced when this connection changed rows: every transaction it committed is then as
    ///   durable as after a checkpoint. The next run appends to the same WAL instead of
    ///   rewriting and syncing its header, copying pages into the database and syncing that too;
    ///   its first opener rebuilds the WAL index from at most that many bytes.
    /// - above it, the whole WAL is checkpointed into the database, which is synced, and the
    ///   WAL is truncated to zero bytes, so the WAL a store keeps between runs stays small.
    ///
    /// A connection that is not the last (another process has the store open) leaves the WAL
    /// to that process either way; one that fails to sync falls back to the checkpoint.
    public func close() {
        finalizeStatements()
        if let db {
            if !options.readOnly {
                if walFileBytes() <= Self.walKeptAtCloseBytes, sqlite3_total_changes64(db) == changesAtLastSync || syncWAL(db) {
                    jobrun_sqlite3_set_no_checkpoint_on_close(db, 1)
                } else {
                    sqlite3_exec(db, "PRAGMA journal_size_limit=0", nil, nil, nil)
                }
            }
            sqlite3_close_v2(db)
        }
        db = nil
        connection?.release()
    }

    /// Makes every transaction this connection committed durable now. In WAL mode with
    /// `synchronous=NORMAL` a commit reaches the disk at the next checkpoint, or when `close()`
    /// syncs the WAL; this syncs it at once. Nothing is done when nothing was committed since
    /// the last sync, so a later `close()` does not sync again either.
    public func syncCommitted() throws {
        guard let db else { throw PostboxError.sqlite(path: path, code: SQLITE_MISUSE, message: "database is closed") }
        let changes = sqlite3_total_changes64(db)
        guard changes != changesAtLastSync, !options.readOnly else { return }
        guard syncWAL(db) else { throw PostboxError.sqlite(path: path, code: SQLITE_IOERR, message: "cannot sync the WAL") }
        changesAtLastSync = changes
    }

    /// The largest WAL a closing connection leaves without a checkpoint: 64 frames of 4 KiB pages,
    /// a few dozen idle runs' records, which the next opener reads back in well under a
    /// millisecond.
    public static let walKeptAtCloseBytes: Int64 = 64 * (4096 + 24) + 32

    /// Syncs the WAL file through SQLite's own file handle, so the directory sync SQLite owes a
    /// new WAL is done too. True when the WAL is synced or not open (nothing to sync).
    private func syncWAL(_ db: OpaquePointer) -> Bool {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) == SQLITE_OK else { return false }
        guard let file, let methods = file.pointee.pMethods, let sync = methods.pointee.xSync else { return true }
        return sync(file, SQLITE_SYNC_NORMAL) == SQLITE_OK
    }

    private func finalizeStatements() {
        for s in statements.values { sqlite3_finalize(s) }
        for s in pointStatements.joined() { sqlite3_finalize(s.value) }
        for case let s? in controlStatements { sqlite3_finalize(s) }
        statements.removeAll()
        for i in pointStatements.indices { pointStatements[i].removeAll() }
        for i in controlStatements.indices { controlStatements[i] = nil }
    }

    private static func uriEscaped(_ path: String) -> String {
        path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "?#%"))) ?? path
    }

    // MARK: Errors and raw execution

    func error(_ rc: Int32) -> PostboxError {
        if let failure = connection?.takeFailure() { return failure }
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        switch rc & 0xff {
        case SQLITE_NOTADB: return .notADatabase(path: path)
        case SQLITE_CORRUPT: return .corrupt(path: path, detail: message)
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy(path: path)
        case SQLITE_READONLY: return .readOnly(path: path)
        default: return .sqlite(path: path, code: rc, message: message)
        }
    }

    /// Runs SQL that returns no rows worth reading.
    public func exec(_ sql: String) throws {
        guard let db else { throw PostboxError.sqlite(path: path, code: SQLITE_MISUSE, message: "database is closed") }
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        if rc != SQLITE_OK { throw error(rc) }
    }

    /// Runs a query and returns the first column of each row as text (for pragmas and checks).
    public func queryStrings(_ sql: String) throws -> [String] {
        let stmt = try prepare(sql)
        defer { sqlite3_finalize(stmt) }
        var out: [String] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
            if let text = sqlite3_column_text(stmt, 0) { out.append(String(cString: text)) } else { out.append("") }
        }
        return out
    }

    public func queryInt(_ sql: String) throws -> Int64 {
        let stmt = try prepare(sql)
        defer { sqlite3_finalize(stmt) }
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_ROW else { throw error(rc) }
        return sqlite3_column_int64(stmt, 0)
    }

    private func tableNames() throws -> [String] {
        try queryStrings("SELECT name FROM sqlite_master WHERE type='table'")
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        guard let db else { throw PostboxError.sqlite(path: path, code: SQLITE_MISUSE, message: "database is closed") }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc) }
        return stmt
    }

    private func cached(_ sql: String) throws -> OpaquePointer {
        if let s = statements[sql] { return s }
        let s = try prepare(sql)
        statements[sql] = s
        return s
    }

    // MARK: Integrity and maintenance

    /// `PRAGMA integrity_check` (or `quick_check`): "ok" or the problems SQLite found.
    public func integrityCheck(quick: Bool = false) throws -> [String] {
        try queryStrings(quick ? "PRAGMA quick_check" : "PRAGMA integrity_check")
    }

    /// Bytes held by free pages (reclaimable by `compact()`).
    public func freeBytes() throws -> Int64 {
        try queryInt("PRAGMA freelist_count") * queryInt("PRAGMA page_size")
    }

    /// Returns free pages to the file system and truncates the WAL. Returns the bytes reclaimed.
    @discardableResult
    public func compact() throws -> Int64 {
        let before = try freeBytes()
        if try queryInt("PRAGMA auto_vacuum") == 2 {
            try exec("PRAGMA incremental_vacuum")
        } else {
            try exec("VACUUM")
        }
        try exec("PRAGMA wal_checkpoint(TRUNCATE)")
        return max(0, before - (try freeBytes()))
    }

    /// Moves the WAL's pages into the database file (passive: never waits for readers).
    public func checkpoint() throws { try exec("PRAGMA wal_checkpoint(PASSIVE)") }

    // MARK: Transactions

    @inline(__always)
    private func control(_ c: Control) throws -> OpaquePointer {
        if let s = controlStatements[c.rawValue] { return s }
        let s = try prepare(c.sql)
        controlStatements[c.rawValue] = s
        return s
    }

    /// The point statement `kind` for `table`, prepared on first use and kept until close.
    @inline(__always)
    private func pointStatement(_ kind: PointStatement, _ table: ValueBoxTable) throws -> OpaquePointer {
        if let s = pointStatements[kind.rawValue][table.id] { return s }
        let s = try prepare(kind.sql(table.id))
        pointStatements[kind.rawValue][table.id] = s
        return s
    }

    /// Runs a transaction-control statement (no rows).
    private func run(_ c: Control) throws {
        let stmt = try control(c)
        defer { sqlite3_reset(stmt) }
        _ = try step(stmt)
    }

    public func begin() throws {
        if options.readOnly { throw PostboxError.readOnly(path: path) }
        try run(.beginWrite)
        inTransaction = true
    }

    public func beginRead() throws {
        try run(.beginRead)
        inTransaction = true
    }

    public func commit() throws {
        try run(.commit)
        inTransaction = false
        if !createdInTransaction.isEmpty { createdInTransaction.removeAll() }
    }

    public func rollback() {
        if inTransaction { try? run(.rollback) }
        inTransaction = false
        if !createdInTransaction.isEmpty {
            // Those tables no longer exist: forget them and every statement that names them.
            knownTables.subtract(createdInTransaction)
            createdInTransaction.removeAll()
            finalizeStatements()
        }
    }

    /// `PRAGMA data_version`: changes when another connection commits, so caches know when to drop.
    public func dataVersion() throws -> Int64 {
        let stmt = try control(.dataVersion)
        defer { sqlite3_reset(stmt) }
        guard try step(stmt) else { return 0 }
        return sqlite3_column_int64(stmt, 0)
    }

    /// The pager's data version (`SQLITE_FCNTL_DATA_VERSION`): a function call instead of a
    /// statement. Unlike `dataVersion()` it also changes on this connection's own commits, and it
    /// is current only while the database is locked (inside `begin()`'s write transaction, or
    /// right after `commit()`). Nil if the file control is not available.
    public func pagerDataVersion() -> UInt32? {
        var version: UInt32 = 0
        guard sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else { return nil }
        return version
    }

    // MARK: Tables

    private func ensureTable(_ table: ValueBoxTable) throws {
        if knownTables.contains(table.id) { return }
        switch table.keyType {
        case .int64: try exec("CREATE TABLE IF NOT EXISTS t\(table.id) (key INTEGER PRIMARY KEY, value BLOB)")
        case .binary: try exec("CREATE TABLE IF NOT EXISTS t\(table.id) (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID")
        }
        knownTables.insert(table.id)
        if inTransaction { createdInTransaction.insert(table.id) }
    }

    private func tableExists(_ table: ValueBoxTable) -> Bool {
        if knownTables.contains(table.id) { return true }
        // Another process may have created it since we opened.
        guard schemaHasTable(table.id) else { return false }
        knownTables.insert(table.id)
        return true
    }

    /// Whether the schema has table `t<id>` now. One statement, prepared once and bound to the
    /// name: a store whose tables do not exist yet (an empty MediaBox index) asks on every read.
    ///
    /// Kept out of line: inlined into `tableExists`, and with it into every read, it made the
    /// loop of a 100,000-row range scan 12 % slower (`jobrun-bench postbox`, alternating runs).
    @inline(never)
    private func schemaHasTable(_ id: Int32) -> Bool {
        guard let stmt = try? cached("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?") else { return false }
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        sqlite3_bind_text(stmt, 1, "t\(id)", -1, SQLITE_TRANSIENT)
        return sqlite3_step(stmt) == SQLITE_ROW
    }

    private func bind(_ stmt: OpaquePointer, _ index: Int32, _ key: ValueBoxKey, _ table: ValueBoxTable) {
        switch table.keyType {
        case .int64:
            sqlite3_bind_int64(stmt, index, key.getInt64(0))
        case .binary:
            key.bytes.withUnsafeBytes { raw in
                _ = sqlite3_bind_blob(stmt, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), SQLITE_TRANSIENT)
            }
        }
    }

    private func readKey(_ stmt: OpaquePointer, _ column: Int32, _ table: ValueBoxTable) -> ValueBoxKey {
        switch table.keyType {
        case .int64:
            return ValueBoxKey(sqlite3_column_int64(stmt, column))
        case .binary:
            let n = Int(sqlite3_column_bytes(stmt, column))
            guard n > 0, let p = sqlite3_column_blob(stmt, column) else { return ValueBoxKey(bytes: []) }
            return ValueBoxKey(bytes: [UInt8](UnsafeRawBufferPointer(start: p, count: n)))
        }
    }

    private func readValue(_ stmt: OpaquePointer, _ column: Int32) -> Data {
        let n = Int(sqlite3_column_bytes(stmt, column))
        guard n > 0, let p = sqlite3_column_blob(stmt, column) else { return Data() }
        return Data(bytes: p, count: n)
    }

    func step(_ stmt: OpaquePointer) throws -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw error(rc)
    }

    public func get(_ table: ValueBoxTable, key: ValueBoxKey) throws -> Data? {
        guard tableExists(table) else { return nil }
        let stmt = try pointStatement(.get, table)
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        return try withBoundKey(stmt, 1, key, table) { try step(stmt) ? readValue(stmt, 0) : nil }
    }

    /// A point read per key on the cached statement: in-process, a batch costs what its reads do.
    public func get(_ table: ValueBoxTable, keys: [ValueBoxKey]) throws -> [ValueBoxKey: Data] {
        guard !keys.isEmpty, tableExists(table) else { return [:] }
        let stmt = try pointStatement(.get, table)
        var out: [ValueBoxKey: Data] = [:]
        for key in keys where out[key] == nil {
            defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
            if let value = try withBoundKey(stmt, 1, key, table, { try step(stmt) ? readValue(stmt, 0) : nil }) { out[key] = value }
        }
        return out
    }

    public func withValue(_ table: ValueBoxTable, key: ValueBoxKey, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard tableExists(table) else { return false }
        let stmt = try pointStatement(.get, table)
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        return try withBoundKey(stmt, 1, key, table) { () throws -> Bool in
            guard try step(stmt) else { return false }
            let n = Int(sqlite3_column_bytes(stmt, 0))
            try body(UnsafeRawBufferPointer(start: n > 0 ? sqlite3_column_blob(stmt, 0) : nil, count: n))
            return true
        }
    }

    /// Binds `key` without copying it (SQLITE_STATIC) for the duration of `body`, which must
    /// step the statement.
    @inline(__always)
    private func withBoundKey<R>(_ stmt: OpaquePointer, _ index: Int32, _ key: ValueBoxKey, _ table: ValueBoxTable, _ body: () throws -> R) throws -> R {
        switch table.keyType {
        case .int64:
            sqlite3_bind_int64(stmt, index, key.getInt64(0))
            return try body()
        case .binary:
            return try key.bytes.withUnsafeBytes { raw in
                sqlite3_bind_blob(stmt, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), SQLITE_STATIC)
                return try body()
            }
        }
    }

    public func exists(_ table: ValueBoxTable, key: ValueBoxKey) throws -> Bool {
        guard tableExists(table) else { return false }
        let stmt = try cached("SELECT 1 FROM t\(table.id) WHERE key=?")
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        bind(stmt, 1, key, table)
        return try step(stmt)
    }

    public func set(_ table: ValueBoxTable, key: ValueBoxKey, value: Data) throws {
        try ensureTable(table)
        let stmt = try pointStatement(.set, table)
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        try withBoundKey(stmt, 1, key, table) {
            try value.withUnsafeBytes { raw in
                sqlite3_bind_blob(stmt, 2, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), SQLITE_STATIC)
                let rc = sqlite3_step(stmt)
                if rc != SQLITE_DONE { throw error(rc) }
            }
        }
    }

    public func remove(_ table: ValueBoxTable, key: ValueBoxKey) throws {
        guard tableExists(table) else { return }
        let stmt = try pointStatement(.remove, table)
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        bind(stmt, 1, key, table)
        _ = try step(stmt)
    }

    /// The WHERE clause and bind order for `range`.
    private func whereClause(_ range: ValueBoxRange) -> (sql: String, binds: [ValueBoxKey]) {
        var parts: [String] = []
        var binds: [ValueBoxKey] = []
        if let lower = range.lower {
            parts.append(range.lowerInclusive ? "key>=?" : "key>?")
            binds.append(lower)
        }
        if let upper = range.upper {
            parts.append(range.upperInclusive ? "key<=?" : "key<?")
            binds.append(upper)
        }
        return (parts.isEmpty ? "" : " WHERE " + parts.joined(separator: " AND "), binds)
    }

    private func iterate(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int, columns: String,
        row: (OpaquePointer) throws -> Bool
    ) throws {
        guard limit > 0, tableExists(table) else { return }
        let (clause, binds) = whereClause(range)
        let order = range.descending ? "DESC" : "ASC"
        let limitClause = limit == .max ? "" : " LIMIT ?"
        let stmt = try cached("SELECT \(columns) FROM t\(table.id)\(clause) ORDER BY key \(order)\(limitClause)")
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        var index: Int32 = 1
        for key in binds { bind(stmt, index, key, table); index += 1 }
        if limit != .max { sqlite3_bind_int64(stmt, index, Int64(limit)) }
        while try step(stmt) {
            if try !row(stmt) { break }
        }
    }

    public func range(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (ValueBoxKey, Data) throws -> Bool
    ) throws {
        try iterate(table, range, limit: limit, columns: "key, value") { stmt in
            try values(readKey(stmt, 0, table), readValue(stmt, 1))
        }
    }

    public func rangeKeys(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        keys: (ValueBoxKey) throws -> Bool
    ) throws {
        try iterate(table, range, limit: limit, columns: "key") { stmt in
            try keys(readKey(stmt, 0, table))
        }
    }

    public func rangeValues(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try iterate(table, range, limit: limit, columns: "value") { stmt in
            let n = Int(sqlite3_column_bytes(stmt, 0))
            return try values(UnsafeRawBufferPointer(start: n > 0 ? sqlite3_column_blob(stmt, 0) : nil, count: n))
        }
    }

    public func count(_ table: ValueBoxTable, _ range: ValueBoxRange) throws -> Int {
        guard tableExists(table) else { return 0 }
        let (clause, binds) = whereClause(range)
        let stmt = try cached("SELECT count(*) FROM t\(table.id)\(clause)")
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        var index: Int32 = 1
        for key in binds { bind(stmt, index, key, table); index += 1 }
        return try step(stmt) ? Int(sqlite3_column_int64(stmt, 0)) : 0
    }

    public func removeRange(_ table: ValueBoxTable, _ range: ValueBoxRange) throws {
        guard tableExists(table) else { return }
        let (clause, binds) = whereClause(range)
        let stmt = try cached("DELETE FROM t\(table.id)\(clause)")
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        var index: Int32 = 1
        for key in binds { bind(stmt, index, key, table); index += 1 }
        _ = try step(stmt)
    }
}

/// SQLite's "copy the buffer now" destructor, which does not import as a constant.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
/// SQLite's "the buffer outlives the statement step" destructor.
let SQLITE_STATIC = unsafeBitCast(0, to: sqlite3_destructor_type.self)

// MARK: - Space accounting and reclamation

/// How much of the file one SQLite b-tree (a table `t<id>`, its index, or SQLite's own) uses.
public struct SqliteTableSpace: Sendable, Equatable {
    /// The b-tree's name as SQLite knows it (`t2`, `sqlite_autoindex_t7_1`, `sqlite_schema`).
    public var name: String
    /// Pages of the file it occupies, and their bytes.
    public var pages: Int64
    public var bytes: Int64
    /// Bytes of keys and values stored in it (the rest of `bytes` is page headers and slack).
    public var payload: Int64
    /// Rows (leaf cells).
    public var rows: Int64
}

extension SqliteValueBox {
    /// `PRAGMA page_size`.
    public func pageSize() throws -> Int64 { try queryInt("PRAGMA page_size") }
    /// `PRAGMA page_count`: pages in the database file (free ones included).
    public func pageCount() throws -> Int64 { try queryInt("PRAGMA page_count") }
    /// `PRAGMA freelist_count`: pages inside the file that hold nothing.
    public func freePageCount() throws -> Int64 { try queryInt("PRAGMA freelist_count") }
    /// `PRAGMA auto_vacuum`: 0 none, 1 full, 2 incremental.
    public func autoVacuumMode() throws -> Int64 { try queryInt("PRAGMA auto_vacuum") }

    /// Whether this SQLite was built with the `dbstat` virtual table.
    public func hasDbstat() -> Bool {
        (try? queryInt("SELECT count(*) FROM pragma_module_list WHERE name='dbstat'")).map { $0 > 0 } ?? false
    }

    /// Space per b-tree from the `dbstat` virtual table (reads every page: seconds on a
    /// gigabyte file). Nil when this SQLite has no `dbstat`.
    public func tableSpace() throws -> [SqliteTableSpace]? {
        guard hasDbstat() else { return nil }
        // Index b-trees (WITHOUT ROWID tables among them) keep entries in interior cells too.
        let indexTrees = Set(try queryStrings("SELECT name FROM sqlite_master WHERE type='index' OR (type='table' AND sql LIKE '%WITHOUT ROWID%')"))
        let stmt = try prepare(
            "SELECT name, count(*), sum(pgsize), sum(payload), sum(CASE WHEN pagetype='leaf' THEN ncell ELSE 0 END), sum(CASE WHEN pagetype='internal' THEN ncell ELSE 0 END) FROM dbstat GROUP BY name"
        )
        defer { sqlite3_finalize(stmt) }
        var out: [SqliteTableSpace] = []
        while try step(stmt) {
            let name = sqlite3_column_text(stmt, 0).map { String(cString: $0) } ?? ""
            let rows = sqlite3_column_int64(stmt, 4) + (indexTrees.contains(name) ? sqlite3_column_int64(stmt, 5) : 0)
            out.append(
                SqliteTableSpace(
                    name: name, pages: sqlite3_column_int64(stmt, 1), bytes: sqlite3_column_int64(stmt, 2),
                    payload: sqlite3_column_int64(stmt, 3), rows: rows))
        }
        return out
    }

    /// Rows and stored key + value bytes of `table`, counted row by row: the estimate used where
    /// `dbstat` is missing (page overhead is not included).
    public func estimatedPayload(_ table: ValueBoxTable) throws -> (rows: Int64, bytes: Int64) {
        guard schemaHasTable(table.id) else { return (0, 0) }
        let stmt = try prepare("SELECT count(*), coalesce(sum(length(key)) + sum(length(value)), 0) FROM t\(table.id)")
        defer { sqlite3_finalize(stmt) }
        guard try step(stmt) else { return (0, 0) }
        return (sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1))
    }

    /// Returns up to `pages` free pages to the file system (`PRAGMA incremental_vacuum(N)`): one
    /// short write transaction of its own, so other writers wait at most one step. Must be
    /// called outside a transaction. Returns the pages released (0 when the file has no free
    /// pages, or when it was not created with incremental auto-vacuum).
    @discardableResult
    public func incrementalVacuum(pages: Int) throws -> Int64 {
        let before = try freePageCount()
        guard before > 0, try autoVacuumMode() == 2 else { return 0 }
        try exec("PRAGMA incremental_vacuum(\(max(1, pages)))")
        return max(0, before - (try freePageCount()))
    }

    /// How a WAL checkpoint went: whether it could not finish (readers or a writer in the way),
    /// frames in the WAL, and frames copied into the database file.
    public typealias CheckpointResult = ValueBoxCheckpoint

    /// `PRAGMA wal_checkpoint(PASSIVE | TRUNCATE)`. TRUNCATE waits for readers and writers on the
    /// busy handler, so it runs here with the busy timeout lowered to `maxWaitMilliseconds`: a
    /// long reader makes it report `busy` instead of holding up other writers for the store's
    /// whole busy timeout.
    @discardableResult
    public func walCheckpoint(truncate: Bool, maxWaitMilliseconds: Int32 = 250) throws -> CheckpointResult {
        guard let db else { throw PostboxError.sqlite(path: path, code: SQLITE_MISUSE, message: "database is closed") }
        if truncate { sqlite3_busy_timeout(db, maxWaitMilliseconds) }
        defer { if truncate { sqlite3_busy_timeout(db, options.busyTimeoutMilliseconds) } }
        let stmt = try prepare("PRAGMA wal_checkpoint(\(truncate ? "TRUNCATE" : "PASSIVE"))")
        defer { sqlite3_finalize(stmt) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { return CheckpointResult(busy: true, logFrames: -1, checkpointedFrames: -1) }
        guard rc == SQLITE_ROW else { throw error(rc) }
        return CheckpointResult(
            busy: sqlite3_column_int64(stmt, 0) != 0, logFrames: sqlite3_column_int64(stmt, 1),
            checkpointedFrames: sqlite3_column_int64(stmt, 2))
    }

    /// `PRAGMA journal_size_limit`: after a checkpoint resets the WAL, SQLite truncates the file
    /// to at most this many bytes instead of keeping its high-water size.
    public func setJournalSizeLimit(_ bytes: Int64) throws {
        _ = try queryStrings("PRAGMA journal_size_limit=\(bytes)")
    }

    /// Size of the `-wal` file in bytes (0 when there is none).
    public func walFileBytes() -> Int64 {
        var st = stat()
        return stat(path + "-wal", &st) == 0 ? Int64(st.st_size) : 0
    }
}
