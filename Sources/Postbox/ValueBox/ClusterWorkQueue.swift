import Foundation

/// The work of the `jobrun schedule` hosts sharing a store: one item per (job, account, fire),
/// kept by the store's engine. At a due fire every host adds the job's items (an item another
/// host added is left as it is), then each claims items one at a time: an item is claimed by one
/// host, which holds it under a lease it renews while the run lasts and marks it done at the
/// end. An item whose lease ran out (its host died or was cut off) is claimed again by another
/// host: that is the takeover. Done items older than a week are pruned as new ones are added.
///
/// Fencing: each claim of an item carries a `generation`, raised by every claim of the item.
/// Renewing, finishing and handing back check it with the holder, so a holder whose item has been
/// taken over since — even by the same process — has its writes refused. A holder that cannot
/// renew stops its run by itself before the lease can run out (`fenceInterval`), and a takeover
/// waits `takeoverGraceSeconds` past the lease, until the engine has also let go of the cut
/// holder's run lock (`ClusterRunLockSession`). Every call has a deadline (`queryTimeout`): a cut
/// link fails it instead of hanging.
///
/// News: adding items and handing one back are announced to the hosts that `listen`, so they
/// claim them at once instead of at their next poll, which remains for leases that ran out
/// (they announce nothing).
///
/// `PostgresClusterWorkQueue` (PostboxPostgres) is the implementation on a shared PostgreSQL
/// server. A store that spreads work over hosts implements this protocol; one that serves a
/// single host needs none (its scheduler runs every fire itself).
public protocol ClusterWorkQueue: AnyObject, Sendable {
    /// This host's process, named in its claims.
    var holder: ClusterWorkHolder { get }
    /// How long a claim holds without renewal.
    var leaseSeconds: Int { get }
    /// After how long the engine ends the session of a silent peer (its run locks with it); nil
    /// where no peer goes silent without its connection closing at once (a Unix socket).
    var keepaliveBoundSeconds: Int? { get }

    /// Adds the items of `job`'s fire at `fire` for `accounts` (those another host added are
    /// left as they are); returns how many this call added. Prunes done items older than a week.
    @discardableResult
    func enqueue(job: String, accounts: [Int64], fire: Date) async throws -> Int
    /// Claims the oldest item of `job` that is pending or whose lease ran out (by more than
    /// `takeoverGraceSeconds`), or nil when there is none. Items other hosts are claiming at this
    /// instant are skipped, not waited for.
    func claim(job: String) async throws -> ClusterWorkClaim?
    /// Extends this claim's lease; false when the item is no longer held under it (its lease ran
    /// out and it was claimed again).
    func renew(_ claim: ClusterWorkClaim) async throws -> Bool
    /// Marks the claimed item done with the run's outcome; false when it was no longer held
    /// under this claim.
    @discardableResult
    func finish(_ claim: ClusterWorkClaim, outcome: String) async throws -> Bool
    /// `finish`, and claims the next item of its job at once (the engine may do both in one
    /// round trip): whether the item was still held under this claim, and the next claim, nil
    /// when the job has nothing claimable. The finished item is never the one claimed.
    func finishAndClaimNext(_ claim: ClusterWorkClaim, outcome: String) async throws -> (finished: Bool, next: ClusterWorkClaim?)
    /// Hands the claimed item back unfinished (this host is stopping, or fenced itself): another
    /// host claims it at once. False, and nothing changed, when it was no longer held under
    /// this claim.
    @discardableResult
    func release(_ claim: ClusterWorkClaim) async throws -> Bool
    /// Calls `onNews` whenever a host adds items or hands one back. Called at every poll: it
    /// starts listening when it is not (or the connection was lost), and does nothing otherwise.
    func listen(_ onNews: @escaping @Sendable () -> Void) async throws
    /// Stops listening.
    func stopListening() async
    /// The items of `job`'s fire at `fireMs` that another holder has claimed (running or done).
    func claimedElsewhere(job: String, fireMs: Int64) async throws -> [ClusterElsewhereClaim]
}

extension ClusterWorkQueue {
    /// The lease renewal period: a third of the lease, so two renewals can be lost before it runs out.
    public var renewalInterval: Duration { .milliseconds(leaseSeconds * 1000 / 3) }

    /// How often a host looks for items to take over: a third of the lease, at most 5 s. A dead
    /// host's item is taken over within `leaseSeconds + takeoverGraceSeconds` plus this.
    public var pollInterval: Duration { .milliseconds(min(5000, max(1000, leaseSeconds * 1000 / 3))) }

    /// How long a holder may go on acting after sending the last renewal that succeeded: the
    /// lease less a margin for clock drift and scheduling delays (a sixth of the lease, at least
    /// 1 s). Past it the holder stops its run (self-fencing): the lease, counted by the engine
    /// from when it received that renewal, has not run out yet.
    public var fenceInterval: Duration { .milliseconds(leaseSeconds * 1000 - max(1000, leaseSeconds * 1000 / 6)) }

    /// How long past an expired lease a takeover waits, so that it always finds the cut
    /// holder's run lock free. That lock's session is ended by the engine's keepalives at most
    /// `keepaliveBoundSeconds` after the holder's last packet, while its lease can have been
    /// renewed last a renewal interval before it went silent and so run out
    /// `leaseSeconds − renewal interval` after: the grace covers the difference, plus 3 s for the
    /// kernel's timers. None where there is no keepalive bound.
    public var takeoverGraceSeconds: Int {
        guard let bound = keepaliveBoundSeconds else { return 0 }
        return max(0, bound - (leaseSeconds - (leaseSeconds + 2) / 3)) + 3
    }

    /// The deadline of every call: the renewal interval, at least 1 s. A call that has no answer
    /// by then fails (and its connection is closed), so a cut link never holds up the renewal or
    /// the fence.
    public var queryTimeout: Double { max(1, Double(leaseSeconds) / 3) }
}

/// One scheduled fire of one job for one account.
public struct ClusterWorkItem: Sendable, Hashable, CustomStringConvertible {
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

    /// `date` in Unix milliseconds, as items keep their fire.
    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

/// A host's process holding items: `pid 123 on host-b`.
public struct ClusterWorkHolder: Sendable, Hashable, CustomStringConvertible {
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
public struct ClusterWorkClaim: Sendable {
    public var item: ClusterWorkItem
    public var previousHolder: ClusterWorkHolder?
    public var generation: Int

    public init(item: ClusterWorkItem, previousHolder: ClusterWorkHolder?, generation: Int) {
        self.item = item
        self.previousHolder = previousHolder
        self.generation = generation
    }
}

/// An item of a fire claimed by another holder.
public struct ClusterElsewhereClaim: Sendable {
    public var account: Int64
    public var holder: ClusterWorkHolder

    public init(account: Int64, holder: ClusterWorkHolder) {
        self.account = account
        self.holder = holder
    }
}
