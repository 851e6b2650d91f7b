import Foundation

/// The run locks of one job's accounts when the store is shared by several hosts, as the store's
/// engine keeps them: a lock per (job, account), all held by one session of the run's own for
/// the whole run. Two runs of the same job over different accounts do not refuse each other; two
/// that share an account do. The engine releases a session's locks when the session ends — its
/// process exits or dies, or its host goes silent for longer than the keepalive bound — so a
/// crashed run never blocks the next one for long.
///
/// The run lock built on it (`ClusterRunLock` in Jobs) polls `takeAll` until its wait is over,
/// checks `isHeld` every `checkIntervalSeconds` while the run lasts, and calls its lost action
/// when the check fails. Calls come from one thread at a time.
///
/// `PostgresClusterRunLockSession` (PostboxPostgres) is the implementation on a shared
/// PostgreSQL server (session-level advisory locks). A store that serves a single host needs
/// none: a file lock under the data root serves it.
public protocol ClusterRunLockSession: AnyObject {
    /// Opens the session (creating what the engine needs) unless it is open; throws when the
    /// engine cannot be reached.
    func open() throws
    /// Tries every account's lock: takes them all and records this holder, or takes none and
    /// returns false. Throws (holding none) when the engine fails.
    func takeAll() throws -> Bool
    /// The recorded holders of the accounts' locks whose sessions still hold them, by account;
    /// empty when the engine cannot be reached.
    func holders() -> [ClusterRunLockHolder]
    /// Ends the sessions of `holders` (for `Replace`): their locks are free at once, and their
    /// runs see their locks lost. False when one could not be ended.
    func end(_ holders: [ClusterRunLockHolder]) -> Bool
    /// How often a holder checks its locks, in seconds; also how long the check and the
    /// release wait for an answer.
    var checkIntervalSeconds: Int { get }
    /// Whether the session still holds its locks: false once it was ended (replaced, the server
    /// restarted) or when the engine does not answer within `timeout` seconds (a cut link).
    func isHeld(timeout: Double) -> Bool
    /// Releases the locks taken and forgets this holder, waiting at most `timeout` seconds for
    /// the engine (a session that cannot answer frees them when it ends).
    func releaseAll(timeout: Double)
    /// Closes the session (the engine frees any lock it still holds).
    func close()
}

/// Who holds one account's run lock.
public struct ClusterRunLockHolder: Sendable, Equatable {
    public var account: Int64
    public var host: String
    public var pid: Int
    /// The engine's id of the holder's session (a PostgreSQL backend's pid).
    public var session: Int

    public init(account: Int64, host: String, pid: Int, session: Int) {
        self.account = account
        self.host = host
        self.pid = pid
        self.session = session
    }
}
