import Foundation
import Postbox
import PostgresNIO

/// `ValueBox` on PostgreSQL: one schema per store, one table per `ValueBoxTable` (`t<id>`, key
/// `bytea` or `int8` primary key, value `bytea`), with `SqliteValueBox`'s semantics:
///
/// - Keys order as memcmp (`bytea` has no collation: byte-wise, a prefix first) or as signed
///   integers (`int8`); ranges, limits, early stop, counts and range removal as in SQLite.
/// - One writer per store: `begin()` takes a transaction-scoped advisory lock on the store
///   (`pg_advisory_xact_lock`), SQLite's `BEGIN IMMEDIATE`; the writer then reads at READ
///   COMMITTED, so it sees every commit made before it got the lock.
/// - Readers see one snapshot (`REPEATABLE READ, READ ONLY`) and never block the writer.
/// - The "another process committed" signal (`dataVersion()`) is a counter row
///   (`valuebox_version`) that every write commit bumps in its last statement.
/// - Writes are held back and sent at commit (or before a read of the same table) in one
///   statement, so a transaction costs a fixed handful of round trips, not one per row.
/// - With a `ValueCipher` (an encrypted root), every value is sealed before it leaves the host
///   and opened after it comes back; keys stay in clear, as ranges are ordered by them. A row
///   of `valuebox_key_check` holds a value sealed under the store's key: a store written with a
///   key refuses to open without it or with another one, and one written without a key refuses
///   to open with one.
///
/// - With `statementTimeout`, every statement has that deadline: a server that does not answer
///   by then (a cut link) fails the transaction and closes the connection, so no write — a
///   fenced run's closing record among them — waits on a server that is gone for longer.
///
/// Not thread-safe: confine an instance to one thread or serial queue (Postbox does); calls
/// block that thread on the server, never Swift's cooperative pool.
public final class PostgresValueBox: ValueBox {
    /// The store's schema (quoted in SQL).
    public let schema: String
    public let readOnly: Bool
    /// Seals every value (nil: values are stored as they are).
    let cipher: ValueCipher?
    let session: PostgresSession
    let quotedSchema: String
    /// `pg_advisory_xact_lock(storeLockClass, lockKey)`: the store's writer lock.
    private let lockKey: Int32
    private var knownTables = Set<Int32>()
    /// Tables this transaction looked for and did not find (forgotten at the next begin).
    private var missingTables = Set<Int32>()
    private var createdInTransaction = Set<Int32>()
    private var batch = PostgresWriteBatch()
    private enum Mode { case none, read, write }
    private var mode = Mode.none
    /// Whether the open write transaction changed anything (so the version is bumped).
    private var wrote = false
    private var versionAtBegin: Int64 = 0
    /// The last version this connection saw or wrote, and the token `dataVersion()` returns:
    /// it moves only when the version moved by someone else's commit.
    private var lastSeenVersion: Int64 = -1
    private var foreignChanges: Int64 = 0

    /// The advisory lock class of store writer locks (two-key form: it never collides with
    /// one-key locks or other classes).
    public static let storeLockClass: Int32 = 0x5642_0001

    /// Opens the store `schema` on the server, creating the schema and its version row unless
    /// `readOnly`. A read-only open of a store that does not exist fails with a clear error.
    /// With `cipher`, values are sealed with it; a store that does not match (written without
    /// a key, or under another one) fails with `.notEncrypted` or `.wrongKey`, one written with
    /// a key and opened without fails with `.keyRequired`, and nothing is changed.
    public init(
        endpoint: PostgresEndpoint, schema: String, readOnly: Bool = false, cipher: ValueCipher? = nil, statementTimeout: Double? = nil
    ) throws {
        try Self.validate(schema: schema)
        self.schema = schema
        self.readOnly = readOnly
        self.cipher = cipher
        self.quotedSchema = "\"\(schema)\""
        self.lockKey = Self.lockKey(schema)
        self.session = try PostgresSession(endpoint: endpoint, name: "postgres:\(schema)")
        session.defaultTimeout = statementTimeout
        try open()
    }

    deinit { close() }

    /// Closes the connection: an open transaction is rolled back by the server.
    public func close() { session.close() }

    /// Store (schema) names: lower-case letters, digits and `_`, starting with a letter, at most
    /// 63 bytes (PostgreSQL's identifier limit).
    public static func validate(schema: String) throws {
        let ok =
            !schema.isEmpty && schema.utf8.count <= 63
            && schema.utf8.first.map { $0 >= 0x61 && $0 <= 0x7a } == true
            && schema.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f }
        if !ok {
            throw PostboxError.server(
                store: "postgres:\(schema)", code: "42602",
                message: "invalid store name: use 1–63 lower-case letters, digits and _, starting with a letter")
        }
    }

    /// FNV-1a of the schema name: the store's advisory lock key.
    static func lockKey(_ schema: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for b in schema.utf8 {
            hash ^= UInt32(b)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash)
    }

    private func open() throws {
        if readOnly {
            let found = try session.queryInt("SELECT count(*) FROM pg_namespace WHERE nspname = $1", binds(schema)) ?? 0
            if found == 0 {
                throw PostboxError.server(store: session.name, code: "3F000", message: "no store here yet (run a job first)")
            }
        } else {
            // Under the store's lock: two processes creating the same store do not race.
            try session.query("BEGIN")
            do {
                try session.query("SELECT pg_advisory_xact_lock(\(Self.storeLockClass), \(lockKey))")
                try session.query("CREATE SCHEMA IF NOT EXISTS \(quotedSchema)")
                try session.query("CREATE TABLE IF NOT EXISTS \(quotedSchema).valuebox_version (id int PRIMARY KEY, version int8 NOT NULL)")
                try session.query("INSERT INTO \(quotedSchema).valuebox_version VALUES (1, 0) ON CONFLICT DO NOTHING")
                try session.query("COMMIT")
            } catch {
                _ = try? session.query("ROLLBACK")
                throw error
            }
        }
        for row in try session.query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 't%'", binds(schema))
        {
            if let name = try? row.first?.decode(String.self), let id = Int32(name.dropFirst()) { knownTables.insert(id) }
        }
        try checkKey()
    }

    /// The `valuebox_key_check` row's table id in the associated data (no store table has it).
    static let keyCheckTable: Int32 = -1
    static let keyCheckText = Data("jobrun store key check".utf8)

    /// Compares the store's key check with `cipher`; a new store (no table yet) opened with a
    /// cipher gets its check row.
    private func checkKey() throws {
        let found = try session.queryInt("SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'valuebox_key_check'", binds(schema)) ?? 0
        var sealed: Data?
        if found > 0, let row = try session.query("SELECT sealed FROM \(quotedSchema).valuebox_key_check WHERE id = 1").first, let cell = row.first {
            sealed = Self.readValue(cell)
        }
        switch (cipher, sealed) {
        case (nil, nil):
            return
        case (nil, _?):
            throw PostboxError.keyRequired(path: session.name)
        case (let cipher?, let sealed?):
            if !cipher.opens(sealed, table: Self.keyCheckTable, key: []) { throw PostboxError.wrongKey(path: session.name) }
        case (let cipher?, nil):
            if !knownTables.isEmpty { throw PostboxError.notEncrypted(path: session.name) }
            if readOnly { return }
            let check = try cipher.seal(Self.keyCheckText, table: Self.keyCheckTable, key: [])
            var b = PostgresBindings()
            b.append(ByteBuffer(bytes: check))
            try session.query("CREATE TABLE IF NOT EXISTS \(quotedSchema).valuebox_key_check (id int PRIMARY KEY, sealed bytea NOT NULL)")
            try session.query("INSERT INTO \(quotedSchema).valuebox_key_check VALUES (1, $1) ON CONFLICT DO NOTHING", b)
            // Another host may have created the store at the same moment: its row stands.
            try checkKey()
        }
    }

    private func binds(_ values: String...) -> PostgresBindings {
        var b = PostgresBindings(capacity: values.count)
        for v in values { b.append(v) }
        return b
    }

    // MARK: Transactions

    public func begin() throws {
        if readOnly { throw PostboxError.readOnly(path: session.name) }
        missingTables.removeAll()
        try session.reconnectIfClosed()
        try session.query("BEGIN ISOLATION LEVEL READ COMMITTED")
        mode = .write
        wrote = false
        // The lock first, then the version: a READ COMMITTED statement sees what was committed
        // before it started, so the version must be read after the lock is held.
        try session.query("SELECT pg_advisory_xact_lock(\(Self.storeLockClass), \(lockKey))")
        versionAtBegin = try readVersion()
    }

    public func beginRead() throws {
        missingTables.removeAll()
        try session.reconnectIfClosed()
        try session.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        mode = .read
        versionAtBegin = try readVersion()
    }

    private func readVersion() throws -> Int64 {
        try session.queryInt("SELECT version FROM \(quotedSchema).valuebox_version WHERE id = 1") ?? 0
    }

    public func commit() throws {
        switch mode {
        case .none:
            return
        case .read:
            try session.query("COMMIT")
        case .write:
            if wrote || !batch.isEmpty {
                // The pending rows and the version bump in one statement.
                let version = try flush(bumpVersion: true)
                try session.query("COMMIT")
                lastSeenVersion = version ?? lastSeenVersion
            } else {
                try session.query("COMMIT")
            }
        }
        mode = .none
        createdInTransaction.removeAll()
    }

    public func rollback() {
        batch.removeAll()
        if mode != .none { _ = try? session.query("ROLLBACK") }
        mode = .none
        if !createdInTransaction.isEmpty {
            knownTables.subtract(createdInTransaction)
            createdInTransaction.removeAll()
        }
    }

    /// Moves when another connection committed a write since this one last looked (this
    /// connection's own commits do not move it). Read at the start of each transaction.
    public func dataVersion() throws -> Int64 {
        let version = mode == .none ? try readVersion() : versionAtBegin
        if version != lastSeenVersion {
            if lastSeenVersion >= 0 { foreignChanges += 1 }
            lastSeenVersion = version
        }
        return foreignChanges
    }

    // MARK: Tables

    private func table(_ table: ValueBoxTable) -> String { "\(quotedSchema).t\(table.id)" }

    private func ensureTable(_ table: ValueBoxTable) throws {
        if knownTables.contains(table.id) { return }
        let keyType = table.keyType == .int64 ? "int8" : "bytea"
        try session.query("CREATE TABLE IF NOT EXISTS \(self.table(table)) (key \(keyType) PRIMARY KEY, value bytea NOT NULL)")
        knownTables.insert(table.id)
        missingTables.remove(table.id)
        if mode != .none { createdInTransaction.insert(table.id) }
    }

    private func tableExists(_ table: ValueBoxTable) throws -> Bool {
        if knownTables.contains(table.id) { return true }
        if missingTables.contains(table.id) { return false }
        // Another process may have created it since we opened.
        let found =
            try session.queryInt(
                "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = $2", binds(schema, "t\(table.id)")) ?? 0
        if found > 0 {
            knownTables.insert(table.id)
            return true
        }
        if mode != .none { missingTables.insert(table.id) }
        return false
    }

    // MARK: Keys and values

    private func append(_ key: ValueBoxKey, of table: ValueBoxTable, to binds: inout PostgresBindings) {
        switch table.keyType {
        case .int64: binds.append(key.getInt64(0))
        case .binary: binds.append(ByteBuffer(bytes: key.bytes))
        }
    }

    private func readKey(_ cell: PostgresCell, _ table: ValueBoxTable) throws -> ValueBoxKey {
        switch table.keyType {
        case .int64:
            do { return ValueBoxKey(try cell.decode(Int64.self)) } catch { throw PostboxError.decoding("\(session.name): \(error)") }
        case .binary:
            guard var bytes = cell.bytes else { return ValueBoxKey(bytes: []) }
            return ValueBoxKey(bytes: bytes.readBytes(length: bytes.readableBytes) ?? [])
        }
    }

    private static func readValue(_ cell: PostgresCell) -> Data {
        guard let bytes = cell.bytes else { return Data() }
        return bytes.withUnsafeReadableBytes { Data($0) }
    }

    /// The value in `cell` of row `key`, opened when the store seals its values.
    private func readValue(_ cell: PostgresCell, _ table: ValueBoxTable, _ key: ValueBoxKey) throws -> Data {
        guard let cipher else { return Self.readValue(cell) }
        guard let bytes = cell.bytes else {
            return try cipher.open(UnsafeRawBufferPointer(start: nil, count: 0), table: table.id, key: key.bytes, store: session.name)
        }
        return try bytes.withUnsafeReadableBytes { try cipher.open($0, table: table.id, key: key.bytes, store: session.name) }
    }

    /// `value` as it is sent to the server for row `key`: sealed when the store seals its values.
    private func stored(_ value: Data, _ table: ValueBoxTable, _ key: ValueBoxKey) throws -> Data {
        guard let cipher else { return value }
        return try cipher.seal(value, table: table.id, key: key.bytes)
    }

    // MARK: Writes

    /// Sends the pending writes (and, at commit, the version bump) in one statement. Returns
    /// the new version when bumped.
    @discardableResult
    private func flush(bumpVersion: Bool) throws -> Int64? {
        var ctes: [String] = []
        var binds = PostgresBindings()
        func next() -> String { "$\(binds.count + 1)" }
        for (id, entry) in batch.tables.sorted(by: { $0.key < $1.key }) {
            let name = table(entry.table)
            let arrayType = entry.table.keyType == .int64 ? "int8[]" : "bytea[]"
            var upsertKeys: [ValueBoxKey] = []
            var upsertValues: [ByteBuffer] = []
            var removals: [ValueBoxKey] = []
            for (key, value) in entry.ops {
                if let value {
                    upsertKeys.append(key)
                    upsertValues.append(ByteBuffer(bytes: try stored(value, entry.table, key)))
                } else {
                    removals.append(key)
                }
            }
            if !upsertKeys.isEmpty {
                let k = next()
                appendKeys(upsertKeys, entry.table, &binds)
                let v = next()
                binds.append(upsertValues)
                ctes.append(
                    "u\(id) AS (INSERT INTO \(name) (key, value) SELECT * FROM unnest(\(k)::\(arrayType), \(v)::bytea[])"
                        + " ON CONFLICT (key) DO UPDATE SET value = excluded.value)")
            }
            if !removals.isEmpty {
                let k = next()
                appendKeys(removals, entry.table, &binds)
                ctes.append("d\(id) AS (DELETE FROM \(name) WHERE key = ANY(\(k)::\(arrayType)))")
            }
        }
        batch.removeAll()
        if bumpVersion {
            ctes.append("v AS (UPDATE \(quotedSchema).valuebox_version SET version = version + 1 WHERE id = 1 RETURNING version)")
            return try session.queryInt("WITH " + ctes.joined(separator: ", ") + " SELECT version FROM v", binds)
        }
        if !ctes.isEmpty { try session.query("WITH " + ctes.joined(separator: ", ") + " SELECT 1", binds) }
        return nil
    }

    private func appendKeys(_ keys: [ValueBoxKey], _ table: ValueBoxTable, _ binds: inout PostgresBindings) {
        switch table.keyType {
        case .int64: binds.append(keys.map { $0.getInt64(0) })
        case .binary: binds.append(keys.map { ByteBuffer(bytes: $0.bytes) })
        }
    }

    /// Sends every write the transaction holds back (before a query that reads all tables).
    func flushPendingWrites() throws {
        if batch.count > 0 { try flush(bumpVersion: false) }
    }

    /// Before a read of `table` that the batch cannot answer: send what is pending for it.
    private func flushIfTouched(_ table: ValueBoxTable) throws {
        if batch.touches(table) { try flush(bumpVersion: false) }
    }

    /// Rows a transaction holds back before sending them anyway: bounds the memory of a big
    /// transaction (the server keeps them uncommitted until COMMIT).
    static let maxPendingRows = 20_000

    /// Outside a transaction a write is sent at once (autocommit), like SQLite's.
    private func afterWrite() throws {
        wrote = true
        if mode == .none {
            try flush(bumpVersion: true)
        } else if batch.count >= Self.maxPendingRows {
            try flush(bumpVersion: false)
        }
    }

    public func set(_ table: ValueBoxTable, key: ValueBoxKey, value: Data) throws {
        if readOnly { throw PostboxError.readOnly(path: session.name) }
        try ensureTable(table)
        batch.set(table, key, value)
        try afterWrite()
    }

    public func remove(_ table: ValueBoxTable, key: ValueBoxKey) throws {
        if readOnly { throw PostboxError.readOnly(path: session.name) }
        guard try tableExists(table) else { return }
        batch.remove(table, key)
        try afterWrite()
    }

    public func removeRange(_ table: ValueBoxTable, _ range: ValueBoxRange) throws {
        if readOnly { throw PostboxError.readOnly(path: session.name) }
        guard try tableExists(table) else { return }
        try flushIfTouched(table)
        var binds = PostgresBindings()
        let clause = whereClause(range, table, &binds)
        try session.query("DELETE FROM \(self.table(table))\(clause)", binds)
        wrote = true
        if mode == .none { try flush(bumpVersion: true) }
    }

    // MARK: Reads

    public func get(_ table: ValueBoxTable, key: ValueBoxKey) throws -> Data? {
        if let pending = batch.pending(table, key) { return pending }
        guard try tableExists(table) else { return nil }
        var binds = PostgresBindings()
        append(key, of: table, to: &binds)
        guard let row = try session.query("SELECT value FROM \(self.table(table)) WHERE key = $1", binds).first, let cell = row.first
        else { return nil }
        return try readValue(cell, table, key)
    }

    /// Keys the transaction wrote come from its pending writes; the others in one statement
    /// (`WHERE key = ANY($1)`), whatever their number.
    public func get(_ table: ValueBoxTable, keys: [ValueBoxKey]) throws -> [ValueBoxKey: Data] {
        var out: [ValueBoxKey: Data] = [:]
        var asked = Set<ValueBoxKey>()
        for key in keys {
            if let pending = batch.pending(table, key) {
                out[key] = pending
            } else {
                asked.insert(key)
            }
        }
        guard !asked.isEmpty, try tableExists(table) else { return out }
        var binds = PostgresBindings()
        appendKeys(Array(asked), table, &binds)
        let arrayType = table.keyType == .int64 ? "int8[]" : "bytea[]"
        for row in try session.query("SELECT key, value FROM \(self.table(table)) WHERE key = ANY($1::\(arrayType))", binds) {
            var cells = row.makeIterator()
            guard let keyCell = cells.next(), let valueCell = cells.next() else { continue }
            let key = try readKey(keyCell, table)
            out[key] = try readValue(valueCell, table, key)
        }
        return out
    }

    public func exists(_ table: ValueBoxTable, key: ValueBoxKey) throws -> Bool {
        if let pending = batch.pending(table, key) { return pending != nil }
        guard try tableExists(table) else { return false }
        var binds = PostgresBindings()
        append(key, of: table, to: &binds)
        return try !session.query("SELECT 1 FROM \(self.table(table)) WHERE key = $1", binds).isEmpty
    }

    /// The WHERE clause of `range`, its bounds appended to `binds`.
    private func whereClause(_ range: ValueBoxRange, _ table: ValueBoxTable, _ binds: inout PostgresBindings) -> String {
        var parts: [String] = []
        if let lower = range.lower {
            append(lower, of: table, to: &binds)
            parts.append(range.lowerInclusive ? "key >= $\(binds.count)" : "key > $\(binds.count)")
        }
        if let upper = range.upper {
            append(upper, of: table, to: &binds)
            parts.append(range.upperInclusive ? "key <= $\(binds.count)" : "key < $\(binds.count)")
        }
        return parts.isEmpty ? "" : " WHERE " + parts.joined(separator: " AND ")
    }

    /// Rows of `range` in order, fetched in pages that grow from 128 to 8192 rows: an early stop
    /// costs at most one page, a full scan few round trips.
    private func iterate(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int, columns: String,
        row: (PostgresRow) throws -> Bool
    ) throws {
        guard limit > 0, try tableExists(table) else { return }
        try flushIfTouched(table)
        var range = range
        var remaining = limit
        var pageSize = 128
        let order = range.descending ? "DESC" : "ASC"
        while remaining > 0 {
            let page = min(remaining, pageSize)
            var binds = PostgresBindings()
            let clause = whereClause(range, table, &binds)
            let rows = try session.query(
                "SELECT key, \(columns) FROM \(self.table(table))\(clause) ORDER BY key \(order) LIMIT \(page)", binds)
            for r in rows {
                if try !row(r) { return }
            }
            if rows.count < page { return }
            remaining -= rows.count
            pageSize = min(pageSize * 4, 8192)
            guard let last = rows.last?.first else { return }
            let lastKey = try readKey(last, table)
            if range.descending {
                range.upper = lastKey
                range.upperInclusive = false
            } else {
                range.lower = lastKey
                range.lowerInclusive = false
            }
        }
    }

    public func range(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (ValueBoxKey, Data) throws -> Bool
    ) throws {
        try iterate(table, range, limit: limit, columns: "value") { row in
            var cells = row.makeIterator()
            guard let keyCell = cells.next(), let valueCell = cells.next() else { return false }
            let key = try readKey(keyCell, table)
            return try values(key, readValue(valueCell, table, key))
        }
    }

    public func rangeKeys(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        keys: (ValueBoxKey) throws -> Bool
    ) throws {
        try iterate(table, range, limit: limit, columns: "NULL") { row in
            guard let keyCell = row.first else { return false }
            return try keys(readKey(keyCell, table))
        }
    }

    public func rangeValues(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try iterate(table, range, limit: limit, columns: "value") { row in
            var cells = row.makeIterator()
            let keyCell = cells.next()
            guard let valueCell = cells.next() else { return false }
            if cipher != nil, let keyCell {
                let value = try readValue(valueCell, table, try readKey(keyCell, table))
                return try value.withUnsafeBytes { try values($0) }
            }
            guard let bytes = valueCell.bytes else { return try values(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return try bytes.withUnsafeReadableBytes { try values($0) }
        }
    }

    /// Every prefix's range in one statement: the ranges as two arrays joined to the table
    /// (an index range scan each), numbered so the keys come back grouped by prefix in order.
    public func keys(_ table: ValueBoxTable, prefixes: [ValueBoxKey]) throws -> [ValueBoxKey: [ValueBoxKey]] {
        var out: [ValueBoxKey: [ValueBoxKey]] = [:]
        var ranges: [(lower: ValueBoxKey, upper: ValueBoxKey)] = []
        for prefix in prefixes where out[prefix] == nil {
            out[prefix] = []
            // An all-0xff prefix has no upper bound: it never names an entity; read it alone.
            guard table.keyType == .binary, let upper = prefix.prefixUpperBound else {
                try rangeKeys(table, .prefix(prefix), limit: .max) { key in
                    out[prefix, default: []].append(key)
                    return true
                }
                continue
            }
            ranges.append((prefix, upper))
        }
        guard !ranges.isEmpty, try tableExists(table) else { return out }
        try flushIfTouched(table)
        var binds = PostgresBindings()
        appendKeys(ranges.map(\.lower), table, &binds)
        appendKeys(ranges.map(\.upper), table, &binds)
        let rows = try session.query(
            "SELECT r.i, t.key FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS r(lower, upper, i) JOIN \(self.table(table)) AS t ON t.key >= r.lower AND t.key < r.upper ORDER BY r.i, t.key",
            binds)
        for row in rows {
            var cells = row.makeIterator()
            guard let indexCell = cells.next(), let keyCell = cells.next() else { continue }
            let index = Int(try indexCell.decode(Int64.self)) - 1
            guard ranges.indices.contains(index) else { continue }
            out[ranges[index].lower, default: []].append(try readKey(keyCell, table))
        }
        return out
    }

    public func count(_ table: ValueBoxTable, _ range: ValueBoxRange) throws -> Int {
        guard try tableExists(table) else { return 0 }
        try flushIfTouched(table)
        var binds = PostgresBindings()
        let clause = whereClause(range, table, &binds)
        return Int(try session.queryInt("SELECT count(*) FROM \(self.table(table))\(clause)", binds) ?? 0)
    }

    /// The stores (schemas) on the server whose names start with `prefix`.
    public static func storeNames(endpoint: PostgresEndpoint, prefix: String) throws -> [String] {
        let session = try PostgresSession(endpoint: endpoint, name: "postgres:\(prefix)*")
        defer { session.close() }
        var binds = PostgresBindings()
        binds.append(prefix)
        return try session.query("SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY 1", binds).compactMap {
            try? $0.first?.decode(String.self)
        }
    }

    /// Drops the store's schema and everything in it (tests and `jobrun` account removal).
    public static func dropStore(endpoint: PostgresEndpoint, schema: String) throws {
        try validate(schema: schema)
        let session = try PostgresSession(endpoint: endpoint, name: "postgres:\(schema)")
        defer { session.close() }
        try session.query("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
    }
}
