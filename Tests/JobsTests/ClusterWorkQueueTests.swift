import Foundation
import Jobs
import Postbox
import PostboxPostgres
import Synchronization
import TestSupport
import XCTest

/// The cluster's work items against a real PostgreSQL server: claiming, renewing, finishing,
/// handing back, taking over after a lease runs out, and `SKIP LOCKED` under concurrent claimers.
final class ClusterWorkQueueTests: XCTestCase {
    private var server: PostgresServer!
    private var database = ""

    override func setUpWithError() throws {
        server = try PostgresServer.shared()
        database = try server.createDatabase("queue_\(UUID().uuidString.prefix(8).lowercased())")
    }

    /// A queue as one host's scheduler sees it: `pid` stands for the holder's process.
    private func queue(pid: Int32, host: String = "host-test", leaseSeconds: Int = 30) throws -> any ClusterWorkQueue {
        let cluster = PostgresClusterConfig(
            address: .unixSocket(path: server.socketPath), username: server.user, database: database, leaseSeconds: leaseSeconds)
        return try cluster.workQueue(holder: .init(host: host, pid: pid))
    }

    private func items(_ where: String = "true") throws -> String {
        try server.psql(
            "SELECT string_agg(account || ':' || state || ':' || coalesce(holder_pid::text, '-') || ':' || claims, ',' ORDER BY account) FROM jobrun_cluster.work_items WHERE \(`where`)",
            database: database)
    }

    func testEachHostAddsTheSameItemsOnceAndClaimsThemOneAtATime() async throws {
        let a = try queue(pid: 1)
        let b = try queue(pid: 2)
        let fire = Date(timeIntervalSince1970: 1_800_000_000)
        let added = try await a.enqueue(job: "sync", accounts: [3, 1, 2], fire: fire)
        let again = try await b.enqueue(job: "sync", accounts: [3, 1, 2], fire: fire)
        XCTAssertEqual(added, 3)
        XCTAssertEqual(again, 0, "the second host's identical fire adds nothing")

        let first = try await a.claim(job: "sync")
        XCTAssertEqual(first?.item, .init(job: "sync", account: 1, fireMs: 1_800_000_000_000))
        XCTAssertNil(first?.previousHolder)
        let second = try await b.claim(job: "sync")
        XCTAssertEqual(second?.item.account, 2)
        let none = try await a.claim(job: "other")
        XCTAssertNil(none, "only the named jobs' items are claimed")
        XCTAssertEqual(try items(), "1:running:1:1,2:running:2:1,3:pending:-:0")

        let renewed = try await a.renew(first!)
        XCTAssertTrue(renewed)
        let foreignRenew = try await b.renew(first!)
        XCTAssertFalse(foreignRenew, "a host cannot renew another's item")
        let foreignFinish = try await b.finish(first!, outcome: "succeeded")
        XCTAssertFalse(foreignFinish)
        let finished = try await a.finish(first!, outcome: "succeeded")
        XCTAssertTrue(finished)
        let twice = try await a.finish(first!, outcome: "failed")
        XCTAssertFalse(twice, "a done item stays done with its outcome")
        XCTAssertEqual(try server.psql("SELECT outcome FROM jobrun_cluster.work_items WHERE account = 1", database: database), "succeeded")

        let elsewhere = try await a.claimedElsewhere(job: "sync", fireMs: 1_800_000_000_000)
        XCTAssertEqual(elsewhere.map(\.account), [2])
        XCTAssertEqual(elsewhere.first?.holder, .init(host: "host-test", pid: 2))
    }

    func testAnExpiredLeaseIsTakenOverAndTheOldHolderLosesTheItem() async throws {
        let dead = try queue(pid: 10, host: "host-a", leaseSeconds: 2)
        let live = try queue(pid: 20, host: "host-b", leaseSeconds: 2)
        try await dead.enqueue(job: "sync", accounts: [0], fire: Date())
        let held = try await dead.claim(job: "sync")
        let whileLeased = try await live.claim(job: "sync")
        XCTAssertNil(whileLeased, "a leased item is not taken")

        try await Task.sleep(for: .milliseconds(2500))
        let taken = try await live.claim(job: "sync")
        XCTAssertEqual(taken?.item, held?.item)
        XCTAssertEqual(taken?.previousHolder, .init(host: "host-a", pid: 10))
        let lateRenew = try await dead.renew(held!)
        XCTAssertFalse(lateRenew, "the old holder learns it lost the item")
        let lateFinish = try await dead.finish(held!, outcome: "succeeded")
        XCTAssertFalse(lateFinish)
        let done = try await live.finish(taken!, outcome: "succeeded")
        XCTAssertTrue(done)
        XCTAssertEqual(try items(), "0:done:20:2")
    }

    func testAStaleClaimOfTheSameHolderIsFencedByItsGeneration() async throws {
        // The same process claims the item again after its first lease ran out (a paused
        // process, a slow renewal): the first claim's writes must not touch the second's.
        let holder = try queue(pid: 10, leaseSeconds: 2)
        try await holder.enqueue(job: "sync", accounts: [0], fire: Date())
        let staleClaim = try await holder.claim(job: "sync")
        let stale = try XCTUnwrap(staleClaim)
        try await Task.sleep(for: .milliseconds(2500))
        let currentClaim = try await holder.claim(job: "sync")
        let current = try XCTUnwrap(currentClaim)
        XCTAssertEqual(current.item, stale.item)
        XCTAssertEqual(current.generation, stale.generation + 1, "each claim raises the fencing token")
        let staleRenew = try await holder.renew(stale)
        XCTAssertFalse(staleRenew, "the old claim's renewal is refused")
        let staleRelease = try await holder.release(stale)
        XCTAssertFalse(staleRelease, "the old claim cannot hand back what the new one holds")
        let staleFinish = try await holder.finish(stale, outcome: "cancelled")
        XCTAssertFalse(staleFinish, "the old claim cannot finish it")
        let renewed = try await holder.renew(current)
        XCTAssertTrue(renewed)
        let done = try await holder.finish(current, outcome: "succeeded")
        XCTAssertTrue(done)
        XCTAssertEqual(try items(), "0:done:10:2")
        XCTAssertEqual(try server.psql("SELECT outcome FROM jobrun_cluster.work_items", database: database), "succeeded")
    }

    func testATakeoverOverTCPWaitsUntilTheCutHoldersRunLockIsFree() throws {
        // Over TCP the server frees a silent holder's run lock `boundSeconds` after its last
        // packet; its lease, renewed last up to a renewal interval before it went silent, may run
        // out sooner. The takeover waits long enough for every allowed lease, and a holder stops
        // its own run before its lease can run out.
        let keepalive = PostgresEndpoint.Keepalive()
        for lease in [2, 3, 10, 20, 30, 45, 60, 300, 3600] {
            let q = try PostgresClusterConfig(address: .tcp(host: "127.0.0.1", port: 5432), username: "u", database: "d", leaseSeconds: lease)
                .workQueue(holder: .init(host: "h", pid: 1))
            let renewal = Double(q.renewalInterval.components.seconds) + Double(q.renewalInterval.components.attoseconds) / 1e18
            let earliestExpiry = Double(lease) - renewal  // after the holder went silent
            XCTAssertGreaterThanOrEqual(
                earliestExpiry + Double(q.takeoverGraceSeconds), Double(keepalive.boundSeconds) + 2, "lease \(lease): the lock is free first")
            let fence = Double(q.fenceInterval.components.seconds) + Double(q.fenceInterval.components.attoseconds) / 1e18
            XCTAssertLessThanOrEqual(fence, Double(lease) - 1, "lease \(lease): the holder stops at least 1 s before its lease ends")
            XCTAssertGreaterThan(fence, renewal, "lease \(lease): one missed renewal does not stop the run")
            XCTAssertLessThanOrEqual(q.queryTimeout, max(1, Double(lease) / 3))
        }
        let local = try queue(pid: 1)
        XCTAssertEqual(local.takeoverGraceSeconds, 0, "over a Unix socket a dead holder's lock is freed with its socket")
    }

    func testARenewedLeaseIsNotTakenOver() async throws {
        let holder = try queue(pid: 10, leaseSeconds: 2)
        let other = try queue(pid: 20, leaseSeconds: 2)
        try await holder.enqueue(job: "sync", accounts: [0], fire: Date())
        let held = try await holder.claim(job: "sync")
        for _ in 0..<4 {
            try await Task.sleep(for: holder.renewalInterval)
            let renewed = try await holder.renew(held!)
            XCTAssertTrue(renewed)
        }
        let taken = try await other.claim(job: "sync")
        XCTAssertNil(taken, "renewed every third of the lease, the item stays with its holder past the lease")
    }

    func testAReleasedItemIsClaimedAtOnceWithoutATakeover() async throws {
        let stopping = try queue(pid: 10)
        let other = try queue(pid: 20)
        try await stopping.enqueue(job: "sync", accounts: [0], fire: Date())
        let held = try await stopping.claim(job: "sync")
        let released = try await stopping.release(held!)
        XCTAssertTrue(released)
        let next = try await other.claim(job: "sync")
        XCTAssertEqual(next?.item, held?.item)
        XCTAssertNil(next?.previousHolder, "a handed-back item is not a takeover")
    }

    func testAddingAndHandingBackItemsIsAnnouncedToListeners() async throws {
        let listening = try queue(pid: 30)
        let adding = try queue(pid: 40)
        let heard = NewsCount()
        try await listening.listen { heard.add() }
        // The client sends LISTEN on its own: wait until the server has run it.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline,
            try server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %jobrun_cluster_work%'", database: database) == "0"
        {
            try await Task.sleep(for: .milliseconds(50))
        }

        try await adding.enqueue(job: "sync", accounts: [1, 2], fire: Date())
        try await heard.wait(for: 1, within: 30)
        let again = try await adding.enqueue(job: "sync", accounts: [1, 2], fire: Date(timeIntervalSince1970: 1_800_000_000))
        XCTAssertEqual(again, 2)
        try await heard.wait(for: 2, within: 30)
        let unchanged = heard.count
        try await adding.enqueue(job: "sync", accounts: [1, 2], fire: Date(timeIntervalSince1970: 1_800_000_000))
        let claim = try await adding.claim(job: "sync")
        try await Task.sleep(for: .seconds(1))
        XCTAssertEqual(heard.count, unchanged, "adding nothing and claiming announce nothing")
        let released = try await adding.release(claim!)
        XCTAssertTrue(released)
        try await heard.wait(for: unchanged + 1, within: 30)
        await listening.stopListening()
    }

    func testFinishingAnItemClaimsTheNextInTheSameStatement() async throws {
        let host = try queue(pid: 50)
        let other = try queue(pid: 60)
        let fire = Date(timeIntervalSince1970: 1_800_000_000)
        try await host.enqueue(job: "sync", accounts: [1, 2, 3], fire: fire)
        let first = try await host.claim(job: "sync")
        let (finished, second) = try await host.finishAndClaimNext(first!, outcome: "succeeded")
        XCTAssertTrue(finished)
        XCTAssertEqual(second?.item.account, 2, "the next oldest item")
        XCTAssertNil(second?.previousHolder)
        let third = try await other.claim(job: "sync")
        XCTAssertEqual(third?.item.account, 3)
        XCTAssertEqual(try items(), "1:done:50:1,2:running:50:1,3:running:60:1")
        let (lastFinished, none) = try await host.finishAndClaimNext(second!, outcome: "failed")
        XCTAssertTrue(lastFinished)
        XCTAssertNil(none, "nothing left to claim: the item is still finished")
        XCTAssertEqual(try server.psql("SELECT outcome FROM jobrun_cluster.work_items WHERE account = 2", database: database), "failed")
        let (stale, nothing) = try await host.finishAndClaimNext(first!, outcome: "failed")
        XCTAssertFalse(stale, "a claim no longer held finishes nothing")
        XCTAssertNil(nothing)
        XCTAssertEqual(try server.psql("SELECT outcome FROM jobrun_cluster.work_items WHERE account = 1", database: database), "succeeded")
    }

    func testConcurrentClaimersTakeEachItemExactlyOnce() async throws {
        let claimers = try (1...8).map { try queue(pid: Int32($0)) }
        let accounts = (0..<60).map(Int64.init)
        try await claimers[0].enqueue(job: "sync", accounts: accounts, fire: Date())
        let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for claimer in claimers {
                group.addTask {
                    var mine: [Int64] = []
                    while let claim = try await claimer.claim(job: "sync") { mine.append(claim.item.account) }
                    return mine
                }
            }
            return try await group.reduce(into: [[Int64]]()) { $0.append($1) }
        }
        let all = claimed.flatMap { $0 }
        XCTAssertEqual(all.sorted(), accounts, "every item claimed, none twice: \(claimed)")
        XCTAssertEqual(try server.psql("SELECT count(*) FROM jobrun_cluster.work_items WHERE claims <> 1 OR state <> 'running'", database: database), "0")
        XCTAssertGreaterThan(claimed.filter { !$0.isEmpty }.count, 1, "the items are shared among the claimers")
    }
}

/// How many announcements a listener heard.
private final class NewsCount: Sendable {
    private let heard = Mutex(0)
    func add() { heard.withLock { $0 += 1 } }
    var count: Int { heard.withLock { $0 } }

    func wait(for count: Int, within seconds: Double) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while self.count < count, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        XCTAssertGreaterThanOrEqual(self.count, count, "announced within \(seconds) s")
    }
}
