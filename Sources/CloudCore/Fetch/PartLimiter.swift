import Foundation

/// The concurrency limit shared by every download of one `MultipartFetch`: at most
/// `concurrency.limit` part requests run at once (a limit that moves with the measured
/// throughput, see `AdaptiveConcurrency`), waiters are served in order, cancellation removes a
/// waiter.
///
/// Urgent parts (someone waits for them now: `.maximum`) never wait: they run beside the limit,
/// and while any runs no other part starts, so a video's header asked for while a large file
/// downloads goes out at once and shares the link and the CPU only with the parts already in
/// flight (which the transport holds back meanwhile, see `HTTPRequest.urgent`).
final class PartLimiter: @unchecked Sendable {
    // @unchecked Sendable: all state is guarded by `lock`.
    private let lock = NSLock()
    let concurrency: AdaptiveConcurrency
    private var running = 0
    private var urgentRunning = 0
    private var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextId: UInt64 = 0

    /// A fixed limit.
    convenience init(limit: Int) { self.init(AdaptiveConcurrency(initial: limit, floor: limit, ceiling: limit)) }

    init(_ concurrency: AdaptiveConcurrency) { self.concurrency = concurrency }

    /// Records a request that moved `bytes`, for the limit's measurement; called while its slot
    /// is held.
    func completed(bytes: Int64) {
        let full = lock.withLock { !waiters.isEmpty || running >= concurrency.limit }
        concurrency.completed(bytes: bytes, windowFull: full)
    }

    /// Waits for a slot (an urgent part takes one at once); throws `CancellationError` if the
    /// task is cancelled while waiting.
    func acquire(urgent: Bool = false) async throws {
        if urgent {
            try Task.checkCancellation()
            lock.withLock { urgentRunning += 1 }
            return
        }
        let id: UInt64 = lock.withLock {
            nextId += 1; return nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                lock.lock()
                if Task.isCancelled {
                    lock.unlock()
                    c.resume(throwing: CancellationError())
                } else if running < concurrency.limit, urgentRunning == 0 {
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

    /// Frees a slot and hands the free slots to the first waiters (more than one when the limit
    /// has grown, none when it has shrunk, none while an urgent part runs).
    func release(urgent: Bool = false) {
        lock.lock()
        if urgent { urgentRunning -= 1 } else { running -= 1 }
        let limit = concurrency.limit
        var admitted: [CheckedContinuation<Void, any Error>] = []
        while running < limit, urgentRunning == 0, !waiters.isEmpty {
            running += 1
            admitted.append(waiters.removeFirst().continuation)
        }
        lock.unlock()
        for c in admitted { c.resume() }
    }

    /// Runs `body` holding a slot (an urgent one: see the type).
    func withSlot<T: Sendable>(urgent: Bool = false, _ body: () async throws -> T) async throws -> T {
        try await acquire(urgent: urgent)
        defer { release(urgent: urgent) }
        return try await body()
    }
}
