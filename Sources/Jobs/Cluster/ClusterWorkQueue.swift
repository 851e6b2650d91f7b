import Foundation
import PostboxPostgres
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// The work of the `jobrun schedule` hosts sharing a store: one item per (job, account, fire) in
/// `<prefix>_cluster.work_items`. At a due fire every host inserts the job's items
/// (`INSERT … ON CONFLICT DO NOTHING`, the way graphile-worker de-duplicates identical crontabs),
/// then each claims items one at a time (`FOR UPDATE SKIP LOCKED`): an item is claimed by one
/// host, which holds it under a lease it renews while the run lasts and marks it done at the
/// end. An item whose lease ran out (its host died or was cut off) is claimed again by another
/// host: that is the takeover. Done items older than a week are pruned as new ones are added.
///
/// Fencing: each claim raises the item's `claims` count, and the claim's `generation` is that
/// count. Renewing, finishing and handing back check it with the holder, so a holder whose item
/// has been taken over since — even by the same process — has its writes refused. A holder that
/// cannot renew stops its run by itself before the lease can run out (`fenceInterval`), and a
/// takeover waits `takeoverGraceSeconds` past the lease, until the server has also let go of the
/// cut holder's run lock. Every call has a deadline (`queryTimeout`): a cut link fails it
/// instead of hanging.
///
/// News: adding items and handing one back notify the channel `<prefix>_cluster_work`
/// (`pg_notify`); a host that `listen`s claims them at once instead of at its next poll, which
/// remains for leases that ran out (they send nothing).
public actor ClusterWorkQueue {
    /// One scheduled fire of one job for one account.
    public struct Item: Sendable, Hashable, CustomStringConvertible {
        public var job: String
        public var account: Int64
        /// The fire time, Unix milliseconds.
        public var fireMs: Int64

        public init(job: String, account: Int64, fireMs: Int64) {
            self.job = job
            self.account = account
            self.fireMs = fireMs
        }

        public var fire: Date { Date(timeIntervalSince1970: Double(fireMs) / 1000) }
        public var description: String { "\(job) account \(account) fire \(fireMs)" }
    }

    /// A host's process holding items: `pid 123 on host-b`.
    public struct Holder: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var pid: Int32

        public init(host: String, pid: Int32) {
            self.host = host
            self.pid = pid
        }

        public var description: String { "pid \(pid) on \(host)" }
    }

    /// An item this host now holds; `previousHolder` is set when it was taken over from a holder
    /// whose lease had run out. `generation` is the fencing token of this claim: the item's claim
    /// count, which the next claim of the item raises.
    public struct Claim: Sendable {
        public var item: Item
        public var previousHolder: Holder?
        public var generation: Int
    }

    /// Items of a fire claimed by another holder.
    public struct ElsewhereClaim: Sendable {
        public var account: Int64
        public var holder: Holder
    }

    public let holder: Holder
    /// How long a claim holds without renewal.
    public let leaseSeconds: Int
    /// After how long the server ends the session of a silent peer (its run locks with it); nil
    /// over a Unix socket, where no peer goes silent without its socket closing.
    public let keepaliveBoundSeconds: Int?
    private let endpoint: PostgresEndpoint
    private let table: String
    /// The notification channel of `table`'s news.
    private let channel: String
    private var session: PostgresSession?
    /// The connection that listens on `channel`.
    private var listener: PostgresSession?
    /// Blocking calls run here, never on the cooperative pool.
    private let queue = DispatchQueue(label: "jobrun.cluster-work-queue")

    public init(cluster: PostgresClusterConfig, holder: Holder = Holder(host: ProcessInfo.processInfo.hostName, pid: getpid())) throws(JobError) {
        let endpoint = try cluster.endpoint()
        self.endpoint = endpoint
        self.table = "\"\(cluster.schemaPrefix)_cluster\".work_items"
        self.channel = "\(cluster.schemaPrefix)_cluster_work"
        self.holder = holder
        self.leaseSeconds = cluster.leaseSeconds
        // Over a Unix socket the server sees a dead holder's socket close at once.
        if case .tcp = endpoint.address { self.keepaliveBoundSeconds = endpoint.keepalive.boundSeconds } else { self.keepaliveBoundSeconds = nil }
    }

    /// The lease renewal period: a third of the lease, so two renewals can be lost before it runs out.
    public nonisolated var renewalInterval: Duration { .milliseconds(leaseSeconds * 1000 / 3) }

    /// How often a host looks for items to take over: a third of the lease, at most 5 s. A dead
    /// host's item is taken over within `leaseSeconds + takeoverGraceSeconds` plus this.
    public nonisolated var pollInterval: Duration { .milliseconds(min(5000, max(1000, leaseSeconds * 1000 / 3))) }

    /// How long a holder may go on acting after sending the last renewal that succeeded: the
    /// lease less a margin for clock drift and scheduling delays (a sixth of the lease, at least
    /// 1 s). Past it the holder stops its run (self-fencing): the lease, counted by the server
    /// from when it received that renewal, has not run out yet.
    public nonisolated var fenceInterval: Duration { .milliseconds(leaseSeconds * 1000 - Self.driftMarginMs(leaseSeconds: leaseSeconds)) }

    static func driftMarginMs(leaseSeconds: Int) -> Int { max(1000, leaseSeconds * 1000 / 6) }

    /// How long past an expired lease a takeover waits, so that it always finds the cut
    /// holder's run lock free. That lock's session is ended by the server's keepalives at most
    /// `keepalive.boundSeconds` after the holder's last packet, while its lease can have been
    /// renewed last a renewal interval before it went silent and so run out
    /// `leaseSeconds − renewal interval` after: the grace covers the difference, plus 3 s for the
    /// kernel's timers. None over a Unix socket.
    public nonisolated var takeoverGraceSeconds: Int {
        guard let bound = keepaliveBoundSeconds else { return 0 }
        return max(0, bound - (leaseSeconds - (leaseSeconds + 2) / 3)) + 3
    }

    /// The deadline of every call: the renewal interval, at least 1 s. A call that has no answer
    /// by then fails (and its connection is closed), so a cut link never holds up the renewal or
    /// the fence.
    public nonisolated var queryTimeout: Double { max(1, Double(leaseSeconds) / 3) }

    /// Adds the items of `job`'s fire at `fire` for `accounts` (those another host added are
    /// left as they are); returns how many this call added. Prunes done items older than a week.
    @discardableResult
    public func enqueue(job: String, accounts: [Int64], fire: Date) async throws -> Int {
        let (table, timeout, news) = (self.table, self.queryTimeout, self.news)
        var bindings = PostgresBindings()
        bindings.append(job)
        bindings.append(Self.milliseconds(fire))
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

    /// Claims the oldest item of `job` that is pending or whose lease ran out, or nil when there
    /// is none. Items other hosts are claiming at this instant are skipped, not waited for.
    public func claim(job: String) async throws -> Claim? {
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
    private static func claim(from row: PostgresRow, at first: Int) throws -> Claim {
        let cells = Array(row)
        let job = try cells[first].decode(String.self)
        let account = try cells[first + 1].decode(Int64.self)
        let fireMs = try cells[first + 2].decode(Int64.self)
        let was = try cells[first + 3].decode(String.self)
        let previousHost = try cells[first + 4].decode(String?.self)
        let previousPid = try cells[first + 5].decode(Int?.self)
        let generation = try cells[first + 6].decode(Int.self)
        let previous = was == "running" ? previousHost.map { Holder(host: $0, pid: Int32(previousPid ?? 0)) } : nil
        return Claim(item: Item(job: job, account: account, fireMs: fireMs), previousHolder: previous, generation: generation)
    }

    /// Extends this claim's lease; false when the item is no longer held under it (its lease ran
    /// out and it was claimed again).
    public func renew(_ claim: Claim) async throws -> Bool {
        let (table, lease, timeout) = (self.table, self.leaseSeconds, self.queryTimeout)
        var bindings = holding(claim)
        bindings.append(lease)
        let binds = bindings
        return try await perform { session in
            !(try session.query(
                "UPDATE \(table) SET lease_until = now() + make_interval(secs => $7) WHERE \(Self.heldByMe) RETURNING 1", binds, timeout: timeout)).isEmpty
        }
    }

    /// Marks the claimed item done with the run's outcome; false when it was no longer held
    /// under this claim.
    @discardableResult
    public func finish(_ claim: Claim, outcome: String) async throws -> Bool {
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

    /// Marks the claimed item done with the run's outcome and claims the next item of its job in
    /// the same statement (one round trip per item instead of two): whether the item was still
    /// held under this claim, and the next claim, nil when the job has nothing claimable.
    public func finishAndClaimNext(_ claim: Claim, outcome: String) async throws -> (finished: Bool, next: Claim?) {
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

    /// Hands the claimed item back unfinished (this host is stopping, or fenced itself): another
    /// host claims it at once. False, and nothing changed, when it was no longer held under
    /// this claim.
    @discardableResult
    public func release(_ claim: Claim) async throws -> Bool {
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

    /// Calls `onNews` whenever a host adds items or hands one back, over a connection of its own
    /// that listens on the queue's channel. Call it at every poll: it opens the connection when
    /// there is none or it was lost (the server restarted), and does nothing otherwise.
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

    /// The items of `job`'s fire at `fireMs` that another holder has claimed (running or done).
    public func claimedElsewhere(job: String, fireMs: Int64) async throws -> [ElsewhereClaim] {
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
                return ElsewhereClaim(account: account, holder: Holder(host: host, pid: Int32(pid)))
            }
        }
    }

    /// The condition on an item's key ($1 job, $2 account, $3 fire), its holder ($4 host, $5 pid)
    /// and the claim's fencing token ($6 generation).
    private static let heldByMe =
        "job = $1 AND account = $2 AND fire_ms = $3 AND state = 'running' AND holder_host = $4 AND holder_pid = $5 AND claims = $6"

    private func holding(_ claim: Claim) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(claim.item.job)
        binds.append(claim.item.account)
        binds.append(claim.item.fireMs)
        binds.append(holder.host)
        binds.append(Int(holder.pid))
        binds.append(claim.generation)
        return binds
    }

    /// `date` in Unix milliseconds, as items keep their fire.
    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

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
