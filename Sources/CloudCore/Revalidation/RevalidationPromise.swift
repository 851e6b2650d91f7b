import Foundation
import Synchronization

/// One result shared by many waiters, each with its own time bound: the answer to one parent's
/// revalidation. A waiter that times out or is cancelled leaves; the others keep waiting.
final class RevalidationPromise<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, any Error>?
        var waiters: [UInt64: CheckedContinuation<T, any Error>] = [:]
        var abandoned: [UInt64: any Error] = [:]
        var nextId: UInt64 = 0
    }

    private let state = Mutex(State())

    var isFulfilled: Bool { state.withLock { $0.result != nil } }

    /// Resolves every waiter (first call wins).
    func fulfill(_ result: Result<T, any Error>) {
        let waiters = state.withLock { s -> [CheckedContinuation<T, any Error>] in
            guard s.result == nil else { return [] }
            s.result = result
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume(with: result) }
    }

    /// The result, or `timeoutError` after `timeout` seconds, or `CancellationError`.
    func wait(timeout: Double, timeoutError: any Error) async throws -> T {
        let id = state.withLock { s -> UInt64 in
            defer { s.nextId += 1 }
            return s.nextId
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: .seconds(max(0, timeout)))
            if !Task.isCancelled { abandon(id, timeoutError) }
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
                let now = state.withLock { s -> Result<T, any Error>? in
                    if let r = s.result { return r }
                    if let e = s.abandoned.removeValue(forKey: id) { return .failure(e) }
                    s.waiters[id] = c
                    return nil
                }
                if let now { c.resume(with: now) }
            }
        } onCancel: {
            abandon(id, CancellationError())
        }
    }

    private func abandon(_ id: UInt64, _ error: any Error) {
        let c = state.withLock { s -> CheckedContinuation<T, any Error>? in
            if let c = s.waiters.removeValue(forKey: id) { return c }
            if s.result == nil { s.abandoned[id] = error }
            return nil
        }
        c?.resume(throwing: error)
    }
}
