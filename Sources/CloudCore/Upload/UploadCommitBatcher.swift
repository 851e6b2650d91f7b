import Foundation
import Postbox
import Synchronization

/// Group commit of an upload's small write transactions (a part acknowledged, an item marked
/// sent): the operations that arrive while one transaction runs are committed together in the
/// next, instead of one transaction each. Every caller still resumes only after the transaction
/// holding its operation has committed, so what it records is as durable as before; only the
/// number of commits (and of hops to the store's queue) shrinks when many parts and items are
/// in flight.
///
/// An operation has two halves: `check` only reads (a lease still held, an item still there)
/// and may throw, which fails that operation alone; `apply` writes, and a failure there fails
/// the whole transaction (every operation in it), since its writes so far roll back together.
final class UploadCommitBatcher: Sendable {
    private struct Operation: Sendable {
        let check: @Sendable (Transaction) throws -> Void
        let apply: @Sendable (Transaction) throws -> Void
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var pending: [Operation] = []
        var draining = false
    }

    private let postbox: Postbox
    private let state = Mutex(State())
    /// Where batches are committed: a dispatch queue, so a batch costs one hop (to here, then
    /// straight onto the store's queue) like a lone transaction, not a task and a hop.
    private let queue = DispatchQueue(label: "MultipartUpload.commits")

    init(postbox: Postbox) { self.postbox = postbox }

    /// Runs `check` then `apply` in a write transaction shared with the operations that arrive
    /// meanwhile; returns once that transaction has committed.
    func commit(
        check: @escaping @Sendable (Transaction) throws -> Void = { _ in },
        apply: @escaping @Sendable (Transaction) throws -> Void
    ) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { s -> Bool in
                s.pending.append(Operation(check: check, apply: apply, continuation: continuation))
                if s.draining { return false }
                s.draining = true
                return true
            }
            if start { queue.async { self.drain() } }
        }
    }

    /// `commit`, for an operation that reads what it needs in `check` (which may throw and
    /// fails this operation alone) and returns it: `check` gives the value `apply` writes from
    /// and the caller receives, once the transaction has committed.
    func commit<Value: Sendable>(
        check: @escaping @Sendable (Transaction) throws -> Value,
        apply: @escaping @Sendable (Transaction, Value) throws -> Void
    ) async throws -> Value {
        let checked = CheckedValue<Value>()
        try await commit(
            check: { tx in checked.set(try check(tx)) },
            apply: { tx in
                guard let value = checked.value else { return }
                try apply(tx, value)
            })
        // Committed: `check` ran and returned in that transaction.
        return checked.value!
    }

    /// What an operation's `check` returned, for its `apply` and its caller.
    private final class CheckedValue<Value: Sendable>: Sendable {
        private let state = Mutex<Value?>(nil)
        func set(_ value: Value) { state.withLock { $0 = value } }
        var value: Value? { state.withLock { $0 } }
    }

    /// Commits batches until none is waiting.
    private func drain() {
        while true {
            let batch = state.withLock { s -> [Operation] in
                let taken = s.pending
                s.pending = []
                if taken.isEmpty { s.draining = false }
                return taken
            }
            if batch.isEmpty { return }
            let outcomes: [Result<Void, any Error>]
            do {
                outcomes = try postbox.transactionSync { tx in
                    var results: [Result<Void, any Error>] = []
                    results.reserveCapacity(batch.count)
                    for operation in batch {
                        do {
                            try operation.check(tx)
                        } catch {
                            results.append(.failure(error))
                            continue
                        }
                        try operation.apply(tx)
                        results.append(.success(()))
                    }
                    return results
                }
            } catch {
                outcomes = Array(repeating: .failure(error), count: batch.count)
            }
            for (operation, outcome) in zip(batch, outcomes) { operation.continuation.resume(with: outcome) }
        }
    }
}
