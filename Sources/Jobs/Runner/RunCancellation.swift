import Synchronization

/// Cancels one run from outside its task, e.g. when its cluster lock is taken from it
/// (`RunLock.whenLost`). A cancellation asked for before the run's task is attached cancels it
/// as soon as it is.
final class RunCancellation: Sendable {
    private struct State {
        var cancel: (@Sendable () -> Void)?
        var requested = false
    }
    private let state = Mutex(State())

    /// Sets how to cancel the run.
    func attach(_ cancel: @escaping @Sendable () -> Void) {
        let requested = state.withLock { s -> Bool in
            s.cancel = cancel
            return s.requested
        }
        if requested { cancel() }
    }

    func cancel() {
        let cancel = state.withLock { s -> (@Sendable () -> Void)? in
            s.requested = true
            return s.cancel
        }
        cancel?()
    }
}
