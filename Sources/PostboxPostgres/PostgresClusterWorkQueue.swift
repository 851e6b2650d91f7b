import Foundation
import Postbox
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// The cluster's work queue on its PostgreSQL database: one row per (job, account, fire) in
/// `<prefix>_cluster.work_items`. At a due fire every host inserts the job's items
/// (`INSERT … ON CONFLICT DO NOTHING`, the way graphile-worker de-duplicates identical crontabs),
/// then each claims items one at a time (`FOR UPDATE SKIP LOCKED`). A claim raises the row's
/// `claims` count, which is the claim's `generation`; renewing, finishing and handing back
/// update only a row whose holder and count are still the claim's.
///
/// News: adding items and handing one back notify the channel `<prefix>_cluster_work`
/// (`pg_notify`), on which `listen` keeps a connection of its own.
public actor PostgresClusterWorkQueue: ClusterWorkQueue {
    public nonisolated let holder: ClusterWorkHolder
    public nonisolated let leaseSeconds: Int
    public nonisolated let keepaliveBoundSeconds: Int?
    private let endpoint: PostgresEndpoint
    private let table: String
    /// The notification channel of `table`'s news.
    private let channel: String
    private var session: PostgresSession?
    /// The connection that listens on `channel`.
    private var listener: PostgresSession?
    /// Blocking calls run here, never on the cooperative pool.
    private let queue = DispatchQueue(label: "jobrun.cluster-work-queue")

    /// The queue in schema `<schemaPrefix>_cluster` of `endpoint`'s database, claiming for
    /// `holder` under leases of `leaseSeconds`.
    public init(endpoint: PostgresEndpoint, schemaPrefix: String, leaseSeconds: Int, holder: ClusterWorkHolder) {
        self.endpoint = endpoint
        self.table = "\"\(schemaPrefix)_cluster\".work_items"
        self.channel = "\(schemaPrefix)_cluster_work"
        self.holder = holder
        self.leaseSeconds = leaseSeconds
        // Over a Unix socket the server sees a dead holder's socket close at once.
        if case .tcp = endpoint.address { self.keepaliveBoundSeconds = endpoint.keepalive.boundSeconds } else { self.keepaliveBoundSeconds = nil }
    }

    @discardableResult
    public func enqueue(job: String, accounts: [Int64], fire: Date) async throws -> Int {
        let (table, timeout, news) = (self.table, self.queryTimeout, self.news)
        var bindings = PostgresBindings()
        bindings.append(job)
        bindings.append(ClusterWorkItem.milliseconds(fire))
        bindings.append(accounts)
        let binds = bindings
        return try await perform { session in
            let rows = try session.query(
                "INSERT INTO \(table) (job, account, fire_ms, state, created_at) SELECT $1, a, $2, 'pending', now() FROM unnest($3::int8[]) AS a ON CONFLICT DO NOTHING RETURNING 1",
                binds, timeout: timeout)
            if !rows.isEmpty {
                try session.query("SELECT pg_notify($1, '')", news, timeout: timeout)
                try session.query("DELETE FROM \(table) WHERE state = 'done' AND finished_at < now() - interval '7 days'", timeout: timeout)
            }
            return rows.count
        }
    }

    public func claim(job: String) async throws -> ClusterWorkClaim? {
        let (table, timeout) = (self.table, self.queryTimeout)
        var bindings = PostgresBindings()
        bindings.append(job)
        let binds = claiming(after: bindings)
        return try await perform { session in
            let rows = try session.query(
                "WITH \(Self.claimingSQL(table: table, job: 1, from: 2)) SELECT * FROM claimed", binds, timeout: timeout)
            return try rows.first.map { try Self.claim(from: $0, at: 0) }
        }
    }

    /// The common table expressions that claim the oldest claimable item of job `$<job>` for this
    /// holder and return it as `claimed`, with parameters `$<from>`… the holder's host and pid,
    /// the lease and the takeover grace (`claiming(after:)`). `excluding` names the parameters
    /// of an item (account, fire) the same statement finishes, which is not claimed again.
    private static func claimingSQL(table: String, job: Int, from first: Int, excluding: (account: Int, fire: Int)? = nil) -> String {
        let (host, pid, lease, grace) = (first, first + 1, first + 2, first + 3)
        let excluded = excluding.map { "  AND NOT (account = $\($0.account) AND fire_ms = $\($0.fire))" } ?? ""
        return """
            pending AS (
              SELECT job, account, fire_ms, state AS was, holder_host AS previous_host, holder_pid AS previous_pid FROM \(table)
              WHERE job = $\(job) AND state = 'pending' ORDER BY fire_ms, account LIMIT 1 FOR UPDATE SKIP LOCKED),
            expired AS (
              SELECT job, account, fire_ms, state AS was, holder_host AS previous_host, holder_pid AS previous_pid FROM \(table)
              WHERE job = $\(job) AND state = 'running' AND lease_until < now() - make_interval(secs => $\(grace))
            \(excluded)
              ORDER BY fire_ms, account LIMIT 1 FOR UPDATE SKIP LOCKED),
            next AS (SELECT * FROM pending UNION ALL SELECT * FROM expired ORDER BY fire_ms, account LIMIT 1),
            claimed AS (
              UPDATE \(table) AS w SET state = 'running', holder_host = $\(host), holder_pid = $\(pid),
                lease_until = now() + make_interval(secs => $\(lease)), claimed_at = now(), claims = w.claims + 1
              FROM next WHERE w.job = next.job AND w.account = next.account AND w.fire_ms = next.fire_ms
              RETURNING w.job, w.account, w.fire_ms, next.was, next.previous_host, next.previous_pid, w.claims)
            """
    }

    /// `bindings` followed by the parameters of `claimingSQL`.
    private func claiming(after bindings: PostgresBindings) -> PostgresBindings {
        var binds = bindings
        binds.append(holder.host)
        binds.append(Int(holder.pid))
        binds.append(leaseSeconds)
        binds.append(takeoverGraceSeconds)
        return binds
    }

    /// The claim in `row`'s columns from `first` on (those `claimingSQL` returns).
    private static func claim(from row: PostgresRow, at first: Int) throws -> ClusterWorkClaim {
        let cells = Array(row)
        let job = try cells[first].decode(String.self)
        let account = try cells[first + 1].decode(Int64.self)
        let fireMs = try cells[first + 2].decode(Int64.self)
        let was = try cells[first + 3].decode(String.self)
        let previousHost = try cells[first + 4].decode(String?.self)
        let previousPid = try cells[first + 5].decode(Int?.self)
        let generation = try cells[first + 6].decode(Int.self)
        let previous = was == "running" ? previousHost.map { ClusterWorkHolder(host: $0, pid: Int32(previousPid ?? 0)) } : nil
        return ClusterWorkClaim(item: ClusterWorkItem(job: job, account: account, fireMs: fireMs), previousHolder: previous, generation: generation)
    }

    public func renew(_ claim: ClusterWorkClaim) async throws -> Bool {
        let (table, lease, timeout) = (self.table, self.leaseSeconds, self.queryTimeout)
        var bindings = holding(claim)
        bindings.append(lease)
        let binds = bindings
        return try await perform { session in
            !(try session.query(
                "UPDATE \(table) SET lease_until = now() + make_interval(secs => $7) WHERE \(Self.heldByMe) RETURNING 1", binds, timeout: timeout)).isEmpty
        }
    }

    @discardableResult
    public func finish(_ claim: ClusterWorkClaim, outcome: String) async throws -> Bool {
        let (table, timeout) = (self.table, self.queryTimeout)
        var bindings = holding(claim)
        bindings.append(outcome)
        let binds = bindings
        return try await perform { session in
            !(try session.query(
                "UPDATE \(table) SET state = 'done', outcome = $7, finished_at = now(), lease_until = NULL WHERE \(Self.heldByMe) RETURNING 1", binds,
                timeout: timeout)).isEmpty
        }
    }

    /// One statement: one round trip per item instead of two.
    public func finishAndClaimNext(_ claim: ClusterWorkClaim, outcome: String) async throws -> (finished: Bool, next: ClusterWorkClaim?) {
        let (table, timeout) = (self.table, self.queryTimeout)
        var bindings = holding(claim)
        bindings.append(outcome)
        let binds = claiming(after: bindings)
        return try await perform { session in
            let rows = try session.query(
                """
                WITH finished AS (
                  UPDATE \(table) SET state = 'done', outcome = $7, finished_at = now(), lease_until = NULL WHERE \(Self.heldByMe) RETURNING 1),
                \(Self.claimingSQL(table: table, job: 1, from: 8, excluding: (account: 2, fire: 3)))
                SELECT (SELECT count(*) FROM finished), claimed.* FROM (VALUES (1)) AS one LEFT JOIN claimed ON true
                """, binds, timeout: timeout)
            guard let row = rows.first else { return (false, nil) }
            let finished = try row.first?.decode(Int.self) == 1
            let claimed = try Array(row)[1].decode(String?.self) != nil
            return (finished, claimed ? try Self.claim(from: row, at: 1) : nil)
        }
    }

    @discardableResult
    public func release(_ claim: ClusterWorkClaim) async throws -> Bool {
        let (table, timeout, news) = (self.table, self.queryTimeout, self.news)
        let binds = holding(claim)
        return try await perform { session in
            let released =
                !(try session.query(
                    "UPDATE \(table) SET state = 'pending', holder_host = NULL, holder_pid = NULL, lease_until = NULL WHERE \(Self.heldByMe) RETURNING 1",
                    binds, timeout: timeout)).isEmpty
            if released { try session.query("SELECT pg_notify($1, '')", news, timeout: timeout) }
            return released
        }
    }

    /// `channel` as the binding of `pg_notify`.
    private var news: PostgresBindings {
        var binds = PostgresBindings()
        binds.append(channel)
        return binds
    }

    /// Listens on the queue's channel over a connection of its own.
    public func listen(_ onNews: @escaping @Sendable () -> Void) async throws {
        if let listener, !listener.isClosed { return }
        listener = nil
        let (endpoint, channel, name) = (self.endpoint, self.channel, String(table.prefix { $0 != "." }))
        let opened: Confined<PostgresSession> = try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        let s = try PostgresSession(endpoint: endpoint, name: "postgres:\(name)")
                        try s.listen(channel, onNews)
                        return Confined(s)
                    })
            }
        }
        listener = opened.value
    }

    /// Closes the listening connection.
    public func stopListening() {
        guard let listener else { return }
        self.listener = nil
        let closing = Confined(listener)
        queue.async { closing.value.close() }
    }

    public func claimedElsewhere(job: String, fireMs: Int64) async throws -> [ClusterElsewhereClaim] {
        let (table, holder, timeout) = (self.table, self.holder, self.queryTimeout)
        var bindings = PostgresBindings()
        bindings.append(job)
        bindings.append(fireMs)
        bindings.append(holder.host)
        bindings.append(Int(holder.pid))
        let binds = bindings
        return try await perform { session in
            try session.query(
                "SELECT account, holder_host, holder_pid FROM \(table) WHERE job = $1 AND fire_ms = $2 AND state <> 'pending' AND NOT (holder_host = $3 AND holder_pid = $4) ORDER BY account",
                binds, timeout: timeout
            ).map { row in
                let (account, host, pid) = try row.decode((Int64, String, Int).self)
                return ClusterElsewhereClaim(account: account, holder: ClusterWorkHolder(host: host, pid: Int32(pid)))
            }
        }
    }

    /// The condition on an item's key ($1 job, $2 account, $3 fire), its holder ($4 host, $5 pid)
    /// and the claim's fencing token ($6 generation).
    private static let heldByMe =
        "job = $1 AND account = $2 AND fire_ms = $3 AND state = 'running' AND holder_host = $4 AND holder_pid = $5 AND claims = $6"

    private func holding(_ claim: ClusterWorkClaim) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(claim.item.job)
        binds.append(claim.item.account)
        binds.append(claim.item.fireMs)
        binds.append(holder.host)
        binds.append(Int(holder.pid))
        binds.append(claim.generation)
        return binds
    }

    /// Runs `body` with the session on the blocking queue; a lost connection is opened again
    /// at the next call.
    private func perform<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        let session = Confined(try await self.session())
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body(session.value) }) }
        }
    }

    private func session() async throws -> PostgresSession {
        if let session, !session.isClosed { return session }
        let (endpoint, table) = (self.endpoint, self.table)
        let schema = String(table.prefix { $0 != "." })
        let opened: Confined<PostgresSession> = try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        let s = try PostgresSession(endpoint: endpoint, name: "postgres:\(schema)")
                        try s.setUp(
                            [
                                "CREATE SCHEMA IF NOT EXISTS \(schema)",
                                """
                                CREATE TABLE IF NOT EXISTS \(table) (job text NOT NULL, account int8 NOT NULL, fire_ms int8 NOT NULL,
                                  state text NOT NULL CHECK (state IN ('pending', 'running', 'done')), holder_host text, holder_pid int,
                                  lease_until timestamptz, claims int NOT NULL DEFAULT 0, outcome text, created_at timestamptz NOT NULL,
                                  claimed_at timestamptz, finished_at timestamptz, PRIMARY KEY (job, account, fire_ms))
                                """,
                                "CREATE INDEX IF NOT EXISTS work_items_open ON \(table) (fire_ms) WHERE state <> 'done'",
                                // A claim reads the oldest pending item of its job, and the running
                                // items (a few per host) for a lease that ran out: each from an index
                                // of only those items, whatever the number of done ones.
                                "CREATE INDEX IF NOT EXISTS work_items_pending ON \(table) (job, fire_ms, account) WHERE state = 'pending'",
                                "CREATE INDEX IF NOT EXISTS work_items_running ON \(table) (job, lease_until) WHERE state = 'running'",
                            ], present: "\(schema).work_items_running")
                        return Confined(s)
                    })
            }
        }
        session = opened.value
        return opened.value
    }
}

/// A value used by one serial queue at a time, handed to it from an actor.
final class Confined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
