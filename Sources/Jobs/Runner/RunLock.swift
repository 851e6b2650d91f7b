import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One run of a job at a time: the lock a run takes before it starts. `JobLock` (a `flock` on
/// a file under the root) serves one host; `ClusterRunLock` (a PostgreSQL session-level
/// advisory lock) serves every host sharing the store. Both are released by the system when
/// their holder dies, so a crashed run never blocks the next one for long.
public protocol RunLock: AnyObject {
    /// Tries to take the lock, polling until `wait` has passed. True if taken.
    func acquire(wait: Duration) throws -> Bool
    func release()
    /// Who holds it, for messages: `pid 123` or `pid 123 on host-b`.
    var holderDescription: String? { get }
    /// `Replace`: asks the current holder to stop (it ends as if sent SIGTERM). False when
    /// there is no holder to ask.
    @discardableResult
    func stopHolder() -> Bool
    /// Calls `action` (on any thread) if the lock is taken from its holder while held: a cluster
    /// lock whose session ended (a `Replace` from another host, a server restart). A file lock
    /// is never lost while its process lives.
    func whenLost(_ action: @escaping @Sendable () -> Void)
}

extension JobLock: RunLock {
    public var holderDescription: String? { holderPid.map { "pid \($0)" } }

    @discardableResult
    public func stopHolder() -> Bool {
        guard let pid = holderPid, pid != getpid() else { return false }
        return kill(pid, SIGTERM) == 0
    }

    public func whenLost(_ action: @escaping @Sendable () -> Void) {}
}
