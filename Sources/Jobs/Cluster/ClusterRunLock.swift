import Foundation
import Postbox

/// The run lock of a job's accounts when the store is shared: the engine's locks of (job,
/// account) (`ClusterRunLockSession`), all held by one session of the run's own for the whole
/// run. Two runs of the same job over different accounts (two hosts sharing a fire's accounts)
/// do not refuse each other; two runs that share an account do. A run takes all its accounts'
/// locks or none. The engine releases them when that session ends — a clean exit, a SIGKILL, or
/// a dead host or cut link (after the keepalive bound).
///
/// A skipped run names the holder, and `Replace` ends its session. A holder checks its own
/// session every `checkIntervalSeconds`: once the locks are gone (replaced, or the server
/// restarted), or the engine does not answer the check within that interval (a cut link), it
/// calls its `whenLost` action, which cancels the run, so it never goes on believing it holds a
/// lock it lost. Releasing has the same deadline: a cut holder does not hang on locks that only
/// the engine's keepalives can free.
public final class ClusterRunLock: RunLock, @unchecked Sendable {
    public let job: String
    public let accounts: [Int64]
    // Used by the caller until the lock is taken, then only on `watchQueue` and by `release`.
    private let locks: any ClusterRunLockSession
    private var held = false
    private let watchQueue = DispatchQueue(label: "jobrun.cluster-run-lock")
    private var watchdog: DispatchSourceTimer?
    /// Read and written on `watchQueue`.
    private var lostAction: (@Sendable () -> Void)?

    /// The lock of `job` over `accounts`, taken through `locks`.
    public init(job: String, accounts: [Int64], locks: any ClusterRunLockSession) {
        self.job = job
        self.accounts = Array(Set(accounts)).sorted()
        self.locks = locks
    }

    /// The lock of `job` over `accounts` on the cluster's store, held for `host`.
    public convenience init(job: String, accounts: [Int64], cluster: PostgresClusterConfig, host: String = ProcessInfo.processInfo.hostName)
        throws(JobError)
    {
        self.init(job: job, accounts: accounts, locks: try cluster.runLockSession(job: job, accounts: accounts, host: host))
    }

    deinit { release() }

    public func acquire(wait: Duration) throws -> Bool {
        if held { return true }
        do { try locks.open() } catch {
            throw JobError("cannot reach the cluster lock of \(job): \(error)", exitCode: .temporary, retryable: true)
        }
        let deadline = ContinuousClock.now + wait
        while true {
            let taken: Bool
            do { taken = try locks.takeAll() } catch {
                throw JobError("cannot take the cluster lock of \(job): \(error)", exitCode: .temporary, retryable: true)
            }
            if taken {
                held = true
                startWatchdog()
                return true
            }
            if ContinuousClock.now >= deadline { return false }
            usleep(200_000)
        }
    }

    /// The holders of the accounts' locks, none while this lock holds them.
    private func holders() -> [ClusterRunLockHolder] {
        held ? [] : locks.holders()
    }

    public var holderDescription: String? {
        guard let first = holders().first else { return nil }
        return "pid \(first.pid) on \(first.host)" + (accounts.count > 1 ? ", account \(first.account)" : "")
    }

    @discardableResult
    public func stopHolder() -> Bool {
        // Ends each holder's lock session: its locks are free at once, and its watchdog stops
        // its run.
        locks.end(holders())
    }

    /// How long the watchdog's check and the release wait for the engine: the check interval.
    private var answerTimeout: Double { Double(locks.checkIntervalSeconds) }

    /// Checks the lock's session every check interval; a lost session, or one the engine does
    /// not answer within the interval, means a lost lock.
    private func startWatchdog() {
        let timer = DispatchSource.makeTimerSource(queue: watchQueue)
        let interval = locks.checkIntervalSeconds
        let timeout = answerTimeout
        timer.schedule(deadline: .now() + .seconds(interval), repeating: .seconds(interval))
        timer.setEventHandler { [weak self] in
            guard let self, self.held else { return }
            if !self.locks.isHeld(timeout: timeout) {
                self.held = false
                self.watchdog?.cancel()
                self.lostAction?()
            }
        }
        watchdog = timer
        timer.resume()
    }

    public func whenLost(_ action: @escaping @Sendable () -> Void) {
        watchQueue.sync { lostAction = action }
    }

    public func release() {
        watchQueue.sync {
            watchdog?.cancel()
            watchdog = nil
        }
        if held { locks.releaseAll(timeout: answerTimeout) }
        held = false
        locks.close()
    }
}
