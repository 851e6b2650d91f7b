import Foundation

/// The concurrency limit shared by every download of one `MultipartFetch`: at most `limit`
/// part requests run at once, waiters are served in order, cancellation removes a waiter.
final class PartLimiter: @unchecked Sendable {
    // @unchecked Sendable: all state is guarded by `lock`.
    private let lock = NSLock()
    private let limit: Int
    private var running = 0
    private var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextId: UInt64 = 0

    init(limit: Int) { self.limit = max(1, limit) }

    /// Waits for a slot; throws `CancellationError` if the task is cancelled while waiting.
    func acquire() async throws {
        let id: UInt64 = lock.withLock {
            nextId += 1; return nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                lock.lock()
                if Task.isCancelled {
                    lock.unlock()
                    c.resume(throwing: CancellationError())
                } else if running < limit {
                    running += 1
                    lock.unlock()
                    c.resume()
                } else {
                    waiters.append((id, c))
                    lock.unlock()
                }
            }
        } onCancel: {
            lock.lock()
            let index = waiters.firstIndex { $0.id == id }
            let w = index.map { waiters.remove(at: $0) }
            lock.unlock()
            w?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Frees a slot (hands it to the first waiter).
    func release() {
        lock.lock()
        if waiters.isEmpty {
            running -= 1
            lock.unlock()
        } else {
            let w = waiters.removeFirst()
            lock.unlock()
            w.continuation.resume()
        }
    }

    /// Runs `body` holding a slot.
    func withSlot<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }
}
