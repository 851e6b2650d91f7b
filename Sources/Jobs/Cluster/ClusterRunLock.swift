import Foundation
import PostboxPostgres
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// The run lock of a job when the store is shared: a session-level advisory lock
/// (`pg_try_advisory_lock`) on the cluster's database, held by a connection of its own for the
/// whole run. The server releases it when that session ends — a clean exit, a SIGKILL (the
/// socket closes at once), or a dead host or cut link (after the keepalive bound,
/// `PostgresEndpoint.Keepalive.boundSeconds`, 25 s by default).
///
/// The holder writes who it is (host, pid, backend) in `<prefix>_cluster.run_lock_holders`, so a
/// skipped run names it and `Replace` can end its session (`pg_terminate_backend`). A holder
/// watches its own session every few seconds: once the lock is gone (replaced, or the server
/// restarted), it sends itself SIGTERM, so it never goes on believing it holds a lock it lost.
public final class ClusterRunLock: RunLock, @unchecked Sendable {
    /// The advisory lock class of run locks (two-key form, apart from store writer locks).
    public static let lockClass: Int32 = 0x524C_0001

    public let job: String
    private let endpoint: PostgresEndpoint
    private let schema: String
    private let key: Int32
    private let host: String
    // The session is used by the caller until the lock is taken, then only on `watchQueue`.
    private var session: PostgresSession?
    private var held = false
    private let watchQueue = DispatchQueue(label: "jobrun.cluster-run-lock")
    private var watchdog: DispatchSourceTimer?

    public init(job: String, cluster: PostgresClusterConfig, host: String = ProcessInfo.processInfo.hostName) throws(JobError) {
        self.job = job
        self.endpoint = try cluster.endpoint()
        self.schema = "\(cluster.schemaPrefix)_cluster"
        self.host = host
        var hash: UInt32 = 2_166_136_261
        for b in job.utf8 {
            hash ^= UInt32(b)
            hash = hash &* 16_777_619
        }
        self.key = Int32(bitPattern: hash)
    }

    deinit { release() }

    private func connect() throws -> PostgresSession {
        if let session, !session.isClosed { return session }
        let s = try PostgresSession(endpoint: endpoint, name: "postgres:\(schema)")
        try s.setUp([
            "CREATE SCHEMA IF NOT EXISTS \"\(schema)\"",
            "CREATE TABLE IF NOT EXISTS \"\(schema)\".run_lock_holders (job text PRIMARY KEY, host text NOT NULL, pid int NOT NULL, backend int NOT NULL, since timestamptz NOT NULL)",
        ])
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
            let rows: [PostgresRow]
            do {
                rows = try s.query("SELECT pg_try_advisory_lock(\(Self.lockClass), \(key))")
            } catch {
                throw JobError("cannot take the cluster lock of \(job): \(error)", exitCode: .temporary, retryable: true)
            }
            if (try? rows.first?.first?.decode(Bool.self)) == true {
                held = true
                var binds = PostgresBindings()
                binds.append(job)
                binds.append(host)
                binds.append(Int(getpid()))
                _ = try? s.query(
                    "INSERT INTO \"\(schema)\".run_lock_holders VALUES ($1, $2, $3, pg_backend_pid(), now()) ON CONFLICT (job) DO UPDATE SET host = excluded.host, pid = excluded.pid, backend = excluded.backend, since = excluded.since",
                    binds)
                startWatchdog()
                return true
            }
            if ContinuousClock.now >= deadline { return false }
            usleep(200_000)
        }
    }

    /// The recorded holder, if its session still holds the lock.
    private func holder() -> (host: String, pid: Int, backend: Int)? {
        guard !held, let s = try? connect() else { return nil }
        var binds = PostgresBindings()
        binds.append(job)
        let rows =
            (try? s.query(
                "SELECT h.host, h.pid, h.backend FROM \"\(schema)\".run_lock_holders h JOIN pg_locks l ON l.pid = h.backend AND l.locktype = 'advisory' AND l.classid = \(UInt32(bitPattern: Self.lockClass)) AND l.objid = \(UInt32(bitPattern: key)) AND l.granted WHERE h.job = $1",
                binds)) ?? []
        guard let row = rows.first, let (host, pid, backend) = try? row.decode((String, Int, Int).self) else { return nil }
        return (host, pid, backend)
    }

    public var holderDescription: String? {
        holder().map { "pid \($0.pid) on \($0.host)" }
    }

    @discardableResult
    public func stopHolder() -> Bool {
        guard let holder = holder(), let s = try? connect() else { return false }
        // Ends the holder's lock session: the lock is free at once, and the holder's watchdog
        // stops its run.
        return (try? s.query("SELECT pg_terminate_backend(\(holder.backend))")) != nil
    }

    /// Checks the lock's session every keepalive interval; a lost session means a lost lock.
    private func startWatchdog() {
        let timer = DispatchSource.makeTimerSource(queue: watchQueue)
        let interval = max(1, endpoint.keepalive.intervalSeconds)
        timer.schedule(deadline: .now() + .seconds(interval), repeating: .seconds(interval))
        timer.setEventHandler { [weak self] in
            guard let self, self.held, let s = self.session else { return }
            if s.isClosed || (try? s.query("SELECT 1")) == nil {
                self.held = false
                self.watchdog?.cancel()
                kill(getpid(), SIGTERM)
            }
        }
        watchdog = timer
        timer.resume()
    }

    public func release() {
        watchQueue.sync {
            watchdog?.cancel()
            watchdog = nil
        }
        if held, let s = session {
            var binds = PostgresBindings()
            binds.append(job)
            _ = try? s.query("DELETE FROM \"\(schema)\".run_lock_holders WHERE job = $1 AND backend = pg_backend_pid()", binds)
            _ = try? s.query("SELECT pg_advisory_unlock(\(Self.lockClass), \(key))")
        }
        held = false
        session?.close()
        session = nil
    }
}
