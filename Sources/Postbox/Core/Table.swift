import Foundation

/// Per-transaction state shared by every table of one store: whether a transaction is open,
/// whether it may write, and the change record it is building.
public final class TransactionState {
    public internal(set) var isActive = false
    public internal(set) var isWrite = false
    public internal(set) var changes = PostboxChanges()
    public init() {}

    /// Records that `body` changed something (tables call this as they write).
    public func record(_ body: (inout PostboxChanges) -> Void) { body(&changes) }
}

/// A typed table over one `ValueBoxTable`, as in the seed: business logic above raw bytes.
///
/// Subclasses may cache values and defer writes until `beforeCommit()` (write-behind), so that a
/// value set many times in a transaction is written once and reads see their own writes.
open class Table {
    public final let valueBox: ValueBox
    public final let table: ValueBoxTable
    public final let state: TransactionState

    public init(valueBox: ValueBox, table: ValueBoxTable, state: TransactionState) {
        self.valueBox = valueBox
        self.table = table
        self.state = state
    }

    /// Flushes deferred writes. Runs once at the end of every write transaction, before COMMIT.
    open func beforeCommit() throws {}

    /// Drops cached values: after a rollback, and when another process has changed the file.
    open func clearMemoryCache() {}

    /// Throws unless a transaction is open (a table used after commit is a programming error
    /// that must not silently write outside a transaction).
    public final func checkRead() throws {
        if !state.isActive { throw PostboxError.transactionFinished }
    }

    public final func checkWrite() throws {
        try checkRead()
        if !state.isWrite { throw PostboxError.readOnly(path: "read transaction") }
    }
}
