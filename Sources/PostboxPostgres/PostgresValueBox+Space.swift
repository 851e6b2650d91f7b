import Postbox
import PostgresNIO

/// The space of one store (schema): `pg_column_size` of each live row, which is what a delete
/// takes back at once, beside `pg_total_relation_size`, which holds the table's indexes and the
/// space autovacuum keeps for reuse.
extension PostgresValueBox: ValueBoxSpaceMeasuring {
    public func liveBytes() throws -> Int64 {
        try tableSpace().reduce(0) { $0 + $1.liveBytes }
    }

    public func tableSpace() throws -> [ValueBoxTableSpace] {
        try flushPendingWrites()
        return try storeTables().map { name in
            let table = "\(quotedSchema).\(name)"
            let row = try session.query(
                "SELECT count(*)::int8, coalesce(sum(pg_column_size(t.*)), 0)::int8, pg_total_relation_size('\(table)')::int8 FROM \(table) t")
            guard let cells = row.first, let values = try? cells.decode((Int64, Int64, Int64).self) else {
                throw PostboxError.server(store: "postgres:\(schema)", code: "XX000", message: "no size for table \(name)")
            }
            return ValueBoxTableSpace(name: name, rows: values.0, liveBytes: values.1, diskBytes: values.2)
        }
    }
}
