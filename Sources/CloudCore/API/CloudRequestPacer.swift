import Foundation

/// Spaces requests to at most `rate` per second across every task that shares it (a job's
/// `requestRate`). Each `wait()` reserves the next free slot and sleeps until it; cancellation
/// ends the wait with `CancellationError`.
public actor CloudRequestPacer {
    private let interval: Double
    private var next: ContinuousClock.Instant?

    /// `rate` requests per second; `nil` or a non-positive rate means unlimited.
    public init(rate: Double?) {
        if let rate, rate > 0 { interval = 1 / rate } else { interval = 0 }
    }

    /// Waits for this caller's slot.
    public func wait() async throws {
        guard interval > 0 else { return try Task.checkCancellation() }
        let now = ContinuousClock.now
        let slot = max(now, next ?? now)
        next = slot.advanced(by: .seconds(interval))
        if slot > now { try await Task.sleep(until: slot, clock: .continuous) }
        try Task.checkCancellation()
    }
}
