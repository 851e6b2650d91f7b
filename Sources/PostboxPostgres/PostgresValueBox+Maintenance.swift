import Postbox
import PostgresNIO

/// `ValueBoxMaintenance` on a PostgreSQL schema. The server keeps its own log, checkpoints it,
/// makes every commit durable and reuses freed space (autovacuum), so the operations a file
/// needs from its owner are nothing to do here; what is left is what the server answers for one
/// store: its tables read in full, `VACUUM` of them, and their sizes.
extension PostgresValueBox: ValueBoxMaintenance {
    /// Every table of the store read in full, every value's bytes included: a page the server
    /// cannot read (a checksum failure, a damaged heap or TOAST entry) is an error, named in the
    /// result. `["ok"]` when all read. `quick` only counts the rows.
    public func integrityCheck(quick: Bool) throws -> [String] {
        try flushPendingWrites()
        var problems: [String] = []
        for name in try storeTables() {
            let sql =
                quick
                ? "SELECT count(*) FROM \(quotedSchema).\(name)"
                : "SELECT count(*), coalesce(sum(length(value)), 0)::int8 FROM \(quotedSchema).\(name)"
            do { _ = try session.query(sql) } catch { problems.append("table \(name): \(error)") }
        }
        return problems.isEmpty ? ["ok"] : problems
    }

    /// The server checkpoints its own write-ahead log: nothing for a client to fold in.
    public func walCheckpoint(truncate: Bool, maxWaitMilliseconds: Int32) throws -> ValueBoxCheckpoint { .nothing }

    /// `VACUUM` of each table of the store; the bytes `pg_total_relation_size` fell by (plain
    /// `VACUUM` returns only trailing empty pages to the file system; the rest is kept for
    /// reuse, as autovacuum would).
    @discardableResult
    public func compact() throws -> Int64 {
        try flushPendingWrites()
        let before = try tableSpace().reduce(0) { $0 + $1.bytes }
        for name in try storeTables() { _ = try session.query("VACUUM \(quotedSchema).\(name)") }
        let after = try tableSpace().reduce(0) { $0 + $1.bytes }
        return max(0, before - after)
    }

    /// Autovacuum reclaims in steps of its own: nothing to release here.
    public func incrementalVacuum(pages: Int) throws -> Int64 { 0 }
    /// No free pages of a file: the space a delete frees is kept by the server for reuse.
    public func freeBytes() throws -> Int64 { 0 }
    public func freePageCount() throws -> Int64 { 0 }
    /// No pages to show: sizes are in bytes.
    public func pageSize() throws -> Int64 { 1 }

    /// Per table: `bytes` on the server's disk (`pg_total_relation_size`: its indexes and the
    /// space autovacuum keeps for reuse included), `payload` the live rows (`pg_column_size` of
    /// each, which is what a delete takes back at once); no pages or log.
    public func usage() throws -> ValueBoxUsage {
        let tables = try tableSpace()
        return ValueBoxUsage(
            source: .server, pageSize: 1, pageCount: tables.reduce(0) { $0 + $1.payload }, freePages: 0,
            fileBytes: tables.reduce(0) { $0 + $1.bytes }, walBytes: 0, tables: tables)
    }

    private func tableSpace() throws -> [DatabaseUsage.TableUsage] {
        try flushPendingWrites()
        return try storeTables().map { name in
            let table = "\(quotedSchema).\(name)"
            let row = try session.query(
                "SELECT count(*)::int8, coalesce(sum(pg_column_size(t.*)), 0)::int8, pg_total_relation_size('\(table)')::int8 FROM \(table) t")
            guard let cells = row.first, let values = try? cells.decode((Int64, Int64, Int64).self) else {
                throw PostboxError.server(store: "postgres:\(schema)", code: "XX000", message: "no size for table \(name)")
            }
            return DatabaseUsage.TableUsage(name: name, sqliteName: name, pages: 0, bytes: values.2, payload: values.1, rows: values.0)
        }
    }

    /// No file on this host.
    public func storedBytes() -> Int64 { 0 }
    /// The live rows: what a size limit bounds on a server, where the space a delete frees is
    /// kept for reuse and falls only with maintenance the server runs.
    public func measuredBytes() throws -> Int64 { try tableSpace().reduce(0) { $0 + $1.payload } }
    /// A commit is durable when the server acknowledges it.
    public func syncCommitted() throws {}
    /// The server sizes its own log.
    public func setJournalSizeLimit(_ bytes: Int64) throws {}
    /// No in-process counter: Postbox asks `dataVersion()` in each transaction.
    public func pagerDataVersion() -> UInt32? { nil }

    /// The store's tables (`t<id>`), by name.
    func storeTables() throws -> [String] {
        var binds = PostgresBindings()
        binds.append(schema)
        return try session.query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 AND tablename ~ '^t[0-9]+$' ORDER BY 1", binds
        ).compactMap { try? $0.first?.decode(String.self) }
    }
}
