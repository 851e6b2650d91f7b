/// How a store that is not one file measures its space: a server engine's `ValueBox`.
///
/// An SQLite store is measured in pages of its file. A server keeps rows in files of its own and
/// keeps the space a delete frees for reuse (PostgreSQL's autovacuum) rather than returning it,
/// so what it holds on disk falls only with maintenance the server runs. What the Postbox
/// controls, and what its size limit bounds there, is the bytes of its live rows.
public protocol ValueBoxSpaceMeasuring {
    /// Bytes of the live rows of every table (keys, values and the engine's per-row header), as
    /// committed now.
    func liveBytes() throws -> Int64
    /// Per table: rows, live bytes, and bytes on the server's disk (indexes and space kept for
    /// reuse included).
    func tableSpace() throws -> [ValueBoxTableSpace]
}

/// One table's space in a server store.
public struct ValueBoxTableSpace: Sendable, Equatable {
    /// The engine's name of the table (`t7`).
    public var name: String
    public var rows: Int64
    public var liveBytes: Int64
    public var diskBytes: Int64

    public init(name: String, rows: Int64, liveBytes: Int64, diskBytes: Int64) {
        self.name = name
        self.rows = rows
        self.liveBytes = liveBytes
        self.diskBytes = diskBytes
    }
}
