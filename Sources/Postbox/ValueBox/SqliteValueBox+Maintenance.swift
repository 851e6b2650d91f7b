import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `ValueBoxMaintenance` on an SQLite file: the pragmas behind each operation are the
/// `SqliteValueBox` methods of the same names; here are the measurements of the whole file.
extension SqliteValueBox: ValueBoxMaintenance {
    /// Per b-tree from `dbstat` (a row-by-row estimate of each Postbox table where this SQLite
    /// lacks it), with the file's pages, free pages and WAL.
    public func usage() throws -> ValueBoxUsage {
        var tables: [DatabaseUsage.TableUsage] = []
        let source: DatabaseUsage.Source
        if let space = try tableSpace() {
            source = .dbstat
            for s in space {
                tables.append(.init(name: s.name, sqliteName: s.name, pages: s.pages, bytes: s.bytes, payload: s.payload, rows: s.rows))
            }
        } else {
            source = .estimate
            for id in PostboxTableId.allCases {
                let (rows, bytes) = try estimatedPayload(id.table)
                let name = "t\(id.rawValue)"
                if rows > 0 { tables.append(.init(name: name, sqliteName: name, pages: 0, bytes: bytes, payload: bytes, rows: rows)) }
            }
        }
        let wal = walFileBytes()
        return ValueBoxUsage(
            source: source, pageSize: try pageSize(), pageCount: try pageCount(), freePages: try freePageCount(),
            fileBytes: storedBytes() - wal, walBytes: wal, tables: tables)
    }

    /// The database file plus its WAL. `stat(2)`, not `FileManager.attributesOfItem`, which
    /// builds a dictionary of every attribute (owner and group names read from `/etc/passwd`)
    /// on each call.
    public func storedBytes() -> Int64 {
        var st = stat()
        return (stat(path, &st) == 0 ? Int64(st.st_size) : 0) + walFileBytes()
    }

    /// The pages of the file, free ones included, whatever the WAL still holds: the size the
    /// file has once the WAL is checkpointed.
    public func measuredBytes() throws -> Int64 { try pageCount() * pageSize() }
}
