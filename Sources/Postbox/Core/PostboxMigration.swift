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
    /// Version 2 stores message rows as `MessageRecord`s: a store that holds messages is marked
    /// for the batched rewrite its openers carry out (`MessageRecordConversion`); until it is
    /// done, readers take rows in either layout. Builds of version 1 refuse to write a
    /// version-2 store, which their decoder could not read.
    /// Version 3 indexes the upload queue's open items; builds of version 2 refuse to write a
    /// version-3 store, since an item they queued would be missing from the index.
    public static let all: [PostboxMigration] = [
        PostboxMigration(toVersion: 1) { _ in },
        PostboxMigration(toVersion: 2) { tx in
            if try tx.messages.hasRows() { try tx.metadata.setMessageRecordCursor(.fromStart) }
        },
        PostboxMigration(toVersion: 3) { tx in try tx.uploadQueue.indexOpenItems() },
    ]
}
