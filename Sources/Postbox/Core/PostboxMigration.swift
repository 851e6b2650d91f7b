/// One step of the schema: brings a store to `toVersion` inside the opening write transaction.
/// Steps run in order, once, under the write lock (so two processes opening an old file
/// together migrate it once).
public struct PostboxMigration: Sendable {
    public let toVersion: Int32
    public let apply: @Sendable (Transaction) throws -> Void

    public init(toVersion: Int32, apply: @escaping @Sendable (Transaction) throws -> Void) {
        self.toVersion = toVersion
        self.apply = apply
    }

    /// Version 1 is the initial layout: tables are created on first write, nothing to convert.
    public static let all: [PostboxMigration] = [
        PostboxMigration(toVersion: 1) { _ in }
    ]
}
