import CSQLite
import ConfinedFiles

#if canImport(Glibc)
    import Glibc
#endif

extension SqliteValueBox {
    /// Rows copied per write transaction of an export: enough that commits cost little, few
    /// enough that the new file's WAL and the page cache stay small.
    static let exportRowsPerTransaction = 20_000
    /// The page cache of each side of an export, in KiB: rows are read once, in order, and
    /// written in order, so a larger cache would only hold pages never used again.
    static let exportCacheKiB = 4 * 1024

    /// Copies every table of the store at `from` (opened with `fromKey`, or in clear) into a
    /// new store at `to`, which must not exist, encrypted with `toKey` (or in clear). Rows are
    /// streamed table by table in short transactions, so memory stays flat however large the
    /// store; the new file is checkpointed and synced before this returns. The source is only
    /// read. On an error the new file is left as it is, incomplete: the caller removes it.
    public static func export(from: String, fromKey: StoreKey?, to: String, toKey: StoreKey?) throws {
        var exists = stat()
        if lstat(to, &exists) == 0 { throw PostboxError.sqlite(path: to, code: SQLITE_CANTOPEN, message: "the export's target already exists") }
        let source = try SqliteValueBox(path: from, options: Options(readOnly: true, cacheSizeKiB: exportCacheKiB, key: fromKey))
        defer { source.close() }
        guard let fd = try StoreFile.open(to, .createNew, policy: ConfinementPolicy()) else {
            throw PostboxError.sqlite(path: to, code: SQLITE_CANTOPEN, message: "cannot create the export's target")
        }
        Glibc.close(fd)
        let target = try SqliteValueBox(path: to, options: Options(synchronous: .normal, cacheSizeKiB: exportCacheKiB, key: toKey))
        defer { target.close() }
        try source.beginRead()
        defer { source.rollback() }
        let schema = try source.prepare("SELECT name, sql FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        defer { sqlite3_finalize(schema) }
        var tables: [(name: String, sql: String)] = []
        while try source.step(schema) {
            tables.append((String(cString: sqlite3_column_text(schema, 0)), String(cString: sqlite3_column_text(schema, 1))))
        }
        for table in tables {
            try target.exec(table.sql)
            try copyRows(of: table.name, from: source, to: target)
        }
        try target.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        try target.syncMainFile()
        let folder = Glibc.open(StoreFile.split(to).directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            Glibc.close(folder)
        }
    }

    /// Syncs the database file through SQLite's own handle.
    private func syncMainFile() throws {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard let db, sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
            let file, let sync = file.pointee.pMethods?.pointee.xSync, sync(file, SQLITE_SYNC_FULL) == SQLITE_OK
        else { throw PostboxError.sqlite(path: path, code: SQLITE_IOERR, message: "cannot sync the database file") }
    }

    /// Streams the rows of `table` into the same table of `target`.
    private static func copyRows(of table: String, from source: SqliteValueBox, to target: SqliteValueBox) throws {
        let select = try source.prepare("SELECT key, value FROM \"\(table)\"")
        defer { sqlite3_finalize(select) }
        let insert = try target.prepare("INSERT INTO \"\(table)\" (key, value) VALUES (?, ?)")
        defer { sqlite3_finalize(insert) }
        var inBatch = 0
        try target.begin()
        do {
            while try source.step(select) {
                sqlite3_bind_value(insert, 1, sqlite3_column_value(select, 0))
                sqlite3_bind_value(insert, 2, sqlite3_column_value(select, 1))
                let rc = sqlite3_step(insert)
                sqlite3_reset(insert)
                guard rc == SQLITE_DONE else { throw target.error(rc) }
                inBatch += 1
                if inBatch == exportRowsPerTransaction {
                    try target.commit()
                    try target.begin()
                    inBatch = 0
                }
            }
            try target.commit()
        } catch {
            target.rollback()
            throw error
        }
    }
}
