import Foundation
import Postbox
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// A job's run locks on the cluster's PostgreSQL database: one session-level advisory lock
/// (`pg_try_advisory_lock`) per (job, account), all held by this session. The server releases
/// them when the session ends — a clean exit, a SIGKILL (the socket closes at once), or a dead
/// host or cut link (after the keepalive bound, `PostgresEndpoint.Keepalive.boundSeconds`, 25 s
/// by default).
///
/// The holder writes who it is (host, pid, backend) per account in
/// `<prefix>_cluster.run_locks`, so a skipped run names it and `Replace` can end its session
/// (`pg_terminate_backend`). The check is a `SELECT 1` with a deadline of the keepalive interval.
public final class PostgresClusterRunLockSession: ClusterRunLockSession {
    /// The advisory lock class of run locks (two-key form, apart from store writer locks).
    public static let lockClass: Int32 = 0x524C_0001

    private let job: String
    /// Ascending, without repeats.
    private let accounts: [Int64]
    private let endpoint: PostgresEndpoint
    private let schema: String
    /// The advisory key of each account's lock, in `accounts`' order.
    private let keys: [Int32]
    private let host: String
    private var session: PostgresSession?

    /// The locks of `job` over `accounts` in schema `<schemaPrefix>_cluster`, held for `host`.
    public init(endpoint: PostgresEndpoint, schemaPrefix: String, job: String, accounts: [Int64], host: String) {
        self.job = job
        self.accounts = Array(Set(accounts)).sorted()
        self.endpoint = endpoint
        self.schema = "\(schemaPrefix)_cluster"
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

    deinit { close() }

    public func open() throws { _ = try connect() }

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

    public func takeAll() throws -> Bool {
        let s = try connect()
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
        } catch {
            for k in taken { _ = try? s.query("SELECT pg_advisory_unlock(\(Self.lockClass), \(k))") }
            throw error
        }
        var binds = PostgresBindings()
        binds.append(job)
        binds.append(accounts)
        binds.append(host)
        binds.append(Int(getpid()))
        _ = try? s.query(
            "INSERT INTO \"\(schema)\".run_locks SELECT $1, a, $3, $4, pg_backend_pid(), now() FROM unnest($2::int8[]) AS a ON CONFLICT (job, account) DO UPDATE SET host = excluded.host, pid = excluded.pid, backend = excluded.backend, since = excluded.since",
            binds)
        return true
    }

    public func holders() -> [ClusterRunLockHolder] {
        guard !accounts.isEmpty, let s = try? connect() else { return [] }
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
            return ClusterRunLockHolder(account: account, host: host, pid: pid, session: backend)
        }
    }

    public func end(_ holders: [ClusterRunLockHolder]) -> Bool {
        let backends = Set(holders.map(\.session))
        guard !backends.isEmpty, let s = try? connect() else { return false }
        return backends.allSatisfy { (try? s.query("SELECT pg_terminate_backend(\($0))")) != nil }
    }

    public var checkIntervalSeconds: Int { max(1, endpoint.keepalive.intervalSeconds) }

    public func isHeld(timeout: Double) -> Bool {
        guard let s = session, !s.isClosed else { return false }
        return (try? s.query("SELECT 1", timeout: timeout)) != nil
    }

    public func releaseAll(timeout: Double) {
        guard let s = session else { return }
        var binds = PostgresBindings()
        binds.append(job)
        // A query that times out closes the session, which frees the locks server-side anyway.
        if (try? s.query("DELETE FROM \"\(schema)\".run_locks WHERE job = $1 AND backend = pg_backend_pid()", binds, timeout: timeout)) != nil {
            for key in keys where (try? s.query("SELECT pg_advisory_unlock(\(Self.lockClass), \(key))", timeout: timeout)) == nil { break }
        }
    }

    public func close() {
        session?.close()
        session = nil
    }
}
