import CCurl
import Synchronization

/// How many urgent requests (``HTTPRequest/urgent``) a transport is running, shared by its
/// threads.
final class UrgentRequests: Sendable {
    private let count = Atomic<Int>(0)

    /// Whether any urgent request is running.
    var active: Bool { count.load(ordering: .acquiring) > 0 }

    func begin() { count.add(1, ordering: .releasing) }
    func end() { count.subtract(1, ordering: .releasing) }
}

/// One transport thread's side of urgent requests: while any runs (on any thread of the
/// transport), the thread's other transfers are held back. A running one is paused at its next
/// chunk (the write callback answers `CURL_WRITEFUNC_PAUSE`, libcurl keeps the chunk), so it
/// stops taking CPU and the link; one that arrives waits to start. When the last urgent request
/// has ended, the thread resumes the paused ones and starts the waiting ones.
///
/// Lives on its loop thread only, reached from the loop and the libcurl callbacks it runs (as
/// `BandwidthLimiter`).
final class TransferHold {
    let urgent: UrgentRequests
    /// Paused by the hold, in pause order.
    private var held: [CurlTransfer] = []
    /// Arrived during the hold, not started yet.
    private(set) var waiting: [CurlTransfer] = []

    init(urgent: UrgentRequests) { self.urgent = urgent }

    /// Write callback: may the transfer take received bytes now? If not it is paused.
    func admitReceive(_ transfer: CurlTransfer) -> Bool {
        guard !transfer.request.urgent, urgent.active else { return true }
        if !transfer.isHeld {
            transfer.isHeld = true
            held.append(transfer)
        }
        return false
    }

    /// Whether a transfer that arrives now must wait to start.
    func mustWait(_ transfer: CurlTransfer) -> Bool {
        guard !transfer.request.urgent, urgent.active else { return false }
        waiting.append(transfer)
        return true
    }

    /// Forgets a transfer that finished or was cancelled; true when it was waiting to start.
    @discardableResult
    func remove(_ transfer: CurlTransfer) -> Bool {
        if transfer.isHeld {
            transfer.isHeld = false
            held.removeAll { $0 === transfer }
        }
        guard let i = waiting.firstIndex(where: { $0 === transfer }) else { return false }
        waiting.remove(at: i)
        return true
    }

    /// Once no urgent request runs: resumes the paused transfers and returns those waiting to
    /// start (empty while one still runs).
    func release() -> [CurlTransfer] {
        guard !urgent.active, !held.isEmpty || !waiting.isEmpty else { return [] }
        let resumed = held
        held.removeAll()
        for transfer in resumed {
            transfer.isHeld = false
            if let easy = transfer.easy { _ = jr_easy_unpause(easy.raw) }
        }
        defer { waiting.removeAll() }
        return waiting
    }
}
