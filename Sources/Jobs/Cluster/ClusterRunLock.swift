import Foundation
import PostboxPostgres
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// The run lock of a job's accounts when the store is shared: one session-level advisory lock
/// (`pg_try_advisory_lock`) per (job, account) on the cluster's database, all held by one
/// connection of the run's own for the whole run. Two runs of the same job over different
/// accounts (two hosts sharing a fire's accounts) do not refuse each other; two runs that share
/// an account do. A run takes all its accounts' locks or none. The server releases them when
/// that session ends — a clean exit, a SIGKILL (the socket closes at once), or a dead host or
/// cut link (after the keepalive bound, `PostgresEndpoint.Keepalive.boundSeconds`, 25 s by
/// default).
///
/// The holder writes who it is (host, pid, backend) per account in
/// `<prefix>_cluster.run_locks`, so a skipped run names it and `Replace` can end its session
/// (`pg_terminate_backend`). A holder watches its own session every few seconds: once the locks
/// are gone (replaced, or the server restarted), or the server does not answer the check within
/// the keepalive interval (a cut link), it calls its `whenLost` action, which cancels the run, so
/// it never goes on believing it holds a lock it lost. Releasing has the same deadline: a cut
/// holder does not hang on locks that only the server's keepalives can free.
public final class ClusterRunLock: RunLock, @unchecked Sendable {
    /// The advisory lock class of run locks (two-key form, apart from store writer locks).
    public static let lockClass: Int32 = 0x524C_0001

    public let job: String
    public let accounts: [Int64]
    private let endpoint: PostgresEndpoint
    private let schema: String
    /// The advisory key of each account's lock, in `accounts`' order.
    private let keys: [Int32]
    private let host: String
    // The session is used by the caller until the lock is taken, then only on `watchQueue`.
    private var session: PostgresSession?
    private var held = false
    private let watchQueue = DispatchQueue(label: "jobrun.cluster-run-lock")
    private var watchdog: DispatchSourceTimer?
    /// Read and written on `watchQueue`.
    private var lostAction: (@Sendable () -> Void)?

    public init(job: String, accounts: [Int64], cluster: PostgresClusterConfig, host: String = ProcessInfo.processInfo.hostName) throws(JobError) {
        self.job = job
        self.accounts = Array(Set(accounts)).sorted()
        self.endpoint = try cluster.endpoint()
        self.schema = "\(cluster.schemaPrefix)_cluster"
        self.host = host
        self.keys = self.accounts.map { Self.key(job: job, account: $0) }
    }

    /// The advisory key of (job, account): FNV-1a of the job's name, a zero byte and the account.
    static func key(job: String, account: Int64) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for b in job.utf8 + [0] + String(account).utf8 {
            hash ^= UInt32(b)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash)
    }

    deinit { release() }

    private func connect() throws -> PostgresSession {
        if let session, !session.isClosed { return session }
        let s = try PostgresSession(endpoint: endpoint, name: "postgres:\(schema)")
        try s.setUp(
            [
                "CREATE SCHEMA IF NOT EXISTS \"\(schema)\"",
                "CREATE TABLE IF NOT EXISTS \"\(schema)\".run_locks (job text NOT NULL, account int8 NOT NULL, host text NOT NULL, pid int NOT NULL, backend int NOT NULL, since timestamptz NOT NULL, PRIMARY KEY (job, account))",
            ], present: "\"\(schema)\".run_locks")
        session = s
        return s
    }

    public func acquire(wait: Duration) throws -> Bool {
        if held { return true }
        let s: PostgresSession
        do { s = try connect() } catch {
            throw JobError("cannot reach the cluster lock of \(job): \(error)", exitCode: .temporary, retryable: true)
        }
        let deadline = ContinuousClock.now + wait
        while true {
            if try takeAll(s) {
                held = true
                var binds = PostgresBindings()
                binds.append(job)
                binds.append(accounts)
                binds.append(host)
                binds.append(Int(getpid()))
                _ = try? s.query(
                    "INSERT INTO \"\(schema)\".run_locks SELECT $1, a, $3, $4, pg_backend_pid(), now() FROM unnest($2::int8[]) AS a ON CONFLICT (job, account) DO UPDATE SET host = excluded.host, pid = excluded.pid, backend = excluded.backend, since = excluded.since",
                    binds)
                startWatchdog()
                return true
            }
            if ContinuousClock.now >= deadline { return false }
            usleep(200_000)
        }
    }

    /// Tries every account's lock; keeps them all, or releases those it took and returns false.
    private func takeAll(_ s: PostgresSession) throws -> Bool {
        var taken: [Int32] = []
        do {
            for key in keys {
                let rows = try s.query("SELECT pg_try_advisory_lock(\(Self.lockClass), \(key))")
                guard (try? rows.first?.first?.decode(Bool.self)) == true else {
                    for k in taken { _ = try? s.query("SELECT pg_advisory_unlock(\(Self.lockClass), \(k))") }
                    return false
                }
                taken.append(key)
            }
            return true
        } catch {
            for k in taken { _ = try? s.query("SELECT pg_advisory_unlock(\(Self.lockClass), \(k))") }
            throw JobError("cannot take the cluster lock of \(job): \(error)", exitCode: .temporary, retryable: true)
        }
    }

    /// The recorded holders of the accounts' locks whose sessions still hold them.
    private func holders() -> [(account: Int64, host: String, pid: Int, backend: Int)] {
        guard !held, !accounts.isEmpty, let s = try? connect() else { return [] }
        var binds = PostgresBindings()
        binds.append(job)
        let pairs = zip(accounts, keys).map { "(\($0)::int8, \(UInt32(bitPattern: $1))::oid)" }.joined(separator: ", ")
        let rows =
            (try? s.query(
                """
                SELECT h.account, h.host, h.pid, h.backend FROM "\(schema)".run_locks h JOIN (VALUES \(pairs)) AS k(account, objid) ON k.account = h.account
                JOIN pg_locks l ON l.pid = h.backend AND l.locktype = 'advisory' AND l.classid = \(UInt32(bitPattern: Self.lockClass))
                AND l.objid = k.objid AND l.granted WHERE h.job = $1 ORDER BY h.account
                """,
                binds)) ?? []
        return rows.compactMap { row in
            guard let (account, host, pid, backend) = try? row.decode((Int64, String, Int, Int).self) else { return nil }
            return (account, host, pid, backend)
        }
    }

    public var holderDescription: String? {
        guard let first = holders().first else { return nil }
        return "pid \(first.pid) on \(first.host)" + (accounts.count > 1 ? ", account \(first.account)" : "")
    }

    @discardableResult
    public func stopHolder() -> Bool {
        let backends = Set(holders().map(\.backend))
        guard !backends.isEmpty, let s = try? connect() else { return false }
        // Ends each holder's lock session: its locks are free at once, and its watchdog stops
        // its run.
        return backends.allSatisfy { (try? s.query("SELECT pg_terminate_backend(\($0))")) != nil }
    }

    /// How long the watchdog's check and the release wait for the server: the keepalive interval.
    private var answerTimeout: Double { Double(max(1, endpoint.keepalive.intervalSeconds)) }

    /// Checks the lock's session every keepalive interval; a lost session, or one the server
    /// does not answer within the interval, means a lost lock.
    private func startWatchdog() {
        let timer = DispatchSource.makeTimerSource(queue: watchQueue)
        let interval = max(1, endpoint.keepalive.intervalSeconds)
        let timeout = answerTimeout
        timer.schedule(deadline: .now() + .seconds(interval), repeating: .seconds(interval))
        timer.setEventHandler { [weak self] in
            guard let self, self.held, let s = self.session else { return }
            if s.isClosed || (try? s.query("SELECT 1", timeout: timeout)) == nil {
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
        if held, let s = session {
            var binds = PostgresBindings()
            binds.append(job)
            let timeout = answerTimeout
            // A query that times out closes the session, which frees the locks server-side anyway.
            if (try? s.query("DELETE FROM \"\(schema)\".run_locks WHERE job = $1 AND backend = pg_backend_pid()", binds, timeout: timeout)) != nil {
                for key in keys where (try? s.query("SELECT pg_advisory_unlock(\(Self.lockClass), \(key))", timeout: timeout)) == nil { break }
            }
        }
        held = false
        session?.close()
        session = nil
    }
}
