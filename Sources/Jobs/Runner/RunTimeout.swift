import Dispatch
import Synchronization

/// The job's `timeout` passed.
struct RunTimeout: Error {}

/// Runs `body` in a task of its own, cancelling it when `timeout` passes (it must be
/// cooperative) and throwing `RunTimeout` once it has stopped. Cancelling the caller cancels
/// `body` too, and a caller already cancelled never starts it: the body's task does not inherit
/// the caller's cancellation, and the handler that passes it on may come after the body has
/// passed its own check (a run whose lock was lost before its work must not start that work).
///
/// The deadline is a Dispatch timer, not a sleeping sibling task in a task group: a run that
/// finishes in time (nearly every run) then never creates the group and its second task, which
/// at start-up is a measurable part of an idle cron run.
func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try Task.checkCancellation()
    let task = Task { try await body() }
    let deadline = Deadline()
    let expiry = DispatchWorkItem {
        if deadline.expire() { task.cancel() }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + Deadline.interval(timeout), execute: expiry)
    let result = await withTaskCancellationHandler {
        await task.result
    } onCancel: {
        task.cancel()
    }
    expiry.cancel()
    if !deadline.finish() { throw RunTimeout() }
    return try result.get()
}

/// Which came first, the body's end or the timeout: whichever side sets the state first wins.
private final class Deadline: Sendable {
    private let state = Atomic<UInt8>(0)  // 0 running, 1 finished in time, 2 timed out

    /// True when the timeout came first.
    func expire() -> Bool { state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged }

    /// True when the body ended before the timeout.
    func finish() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged }

    /// `timeout` for Dispatch, in whole nanoseconds (a timeout of centuries stays one).
    static func interval(_ timeout: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = timeout.components
        guard seconds < Int64.max / 1_000_000_000 - 1 else { return .never }
        return .nanoseconds(Int(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)))
    }
}
