import Foundation

/// Deletes the index rows of removed files on a background serial queue, so the SQLite work of
/// one cleanup batch overlaps the unlinks of the next. Rows are still deleted only after their
/// files are gone (a crash in between leaves rows without files, which reconciliation drops).
final class IndexRemover: @unchecked Sendable {
    // @unchecked Sendable: `firstError` is guarded by `lock`; `storageBox` is thread-safe.
    private let queue = DispatchQueue(label: "TimeBasedCleanup.index")
    private let storageBox: StorageBox
    private let lock = NSLock()
    private var firstError: (any Error)?

    init(storageBox: StorageBox) { self.storageBox = storageBox }

    /// Queues the removal of `keys` (one transaction); throws an earlier batch's error, if any.
    func submit(_ keys: [MediaStorageKey]) throws {
        try throwIfFailed()
        guard !keys.isEmpty else { return }
        queue.async { [storageBox] in
            do { try storageBox.remove(keys) } catch {
                self.lock.lock()
                if self.firstError == nil { self.firstError = error }
                self.lock.unlock()
            }
        }
    }

    /// Waits for every queued removal; throws the first failure.
    func finish() throws {
        queue.sync {}
        try throwIfFailed()
    }

    private func throwIfFailed() throws {
        lock.lock()
        defer { lock.unlock() }
        if let firstError { throw firstError }
    }
}
