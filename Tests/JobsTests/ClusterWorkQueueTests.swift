import Foundation
import Jobs
import PostboxPostgres
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
    private func queue(pid: Int32, host: String = "host-test", leaseSeconds: Int = 30) throws -> ClusterWorkQueue {
        let cluster = PostgresClusterConfig(
            address: .unixSocket(path: server.socketPath), username: server.user, database: database, leaseSeconds: leaseSeconds)
        return try ClusterWorkQueue(cluster: cluster, holder: .init(host: host, pid: pid))
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

        let first = try await a.claim(jobs: ["sync"])
        XCTAssertEqual(first?.item, .init(job: "sync", account: 1, fireMs: 1_800_000_000_000))
        XCTAssertNil(first?.previousHolder)
        let second = try await b.claim(jobs: ["sync"])
        XCTAssertEqual(second?.item.account, 2)
        let none = try await a.claim(jobs: ["other"])
        XCTAssertNil(none, "only the named jobs' items are claimed")
        XCTAssertEqual(try items(), "1:running:1:1,2:running:2:1,3:pending:-:0")

        let renewed = try await a.renew(first!.item)
        XCTAssertTrue(renewed)
        let foreignRenew = try await b.renew(first!.item)
        XCTAssertFalse(foreignRenew, "a host cannot renew another's item")
        let foreignFinish = try await b.finish(first!.item, outcome: "succeeded")
        XCTAssertFalse(foreignFinish)
        let finished = try await a.finish(first!.item, outcome: "succeeded")
        XCTAssertTrue(finished)
        let twice = try await a.finish(first!.item, outcome: "failed")
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
        let held = try await dead.claim(jobs: ["sync"])
        let whileLeased = try await live.claim(jobs: ["sync"])
        XCTAssertNil(whileLeased, "a leased item is not taken")

        try await Task.sleep(for: .milliseconds(2500))
        let taken = try await live.claim(jobs: ["sync"])
        XCTAssertEqual(taken?.item, held?.item)
        XCTAssertEqual(taken?.previousHolder, .init(host: "host-a", pid: 10))
        let lateRenew = try await dead.renew(held!.item)
        XCTAssertFalse(lateRenew, "the old holder learns it lost the item")
        let lateFinish = try await dead.finish(held!.item, outcome: "succeeded")
        XCTAssertFalse(lateFinish)
        let done = try await live.finish(taken!.item, outcome: "succeeded")
        XCTAssertTrue(done)
        XCTAssertEqual(try items(), "0:done:20:2")
    }

    func testARenewedLeaseIsNotTakenOver() async throws {
        let holder = try queue(pid: 10, leaseSeconds: 2)
        let other = try queue(pid: 20, leaseSeconds: 2)
        try await holder.enqueue(job: "sync", accounts: [0], fire: Date())
        let held = try await holder.claim(jobs: ["sync"])
        for _ in 0..<4 {
            try await Task.sleep(for: holder.renewalInterval)
            let renewed = try await holder.renew(held!.item)
            XCTAssertTrue(renewed)
        }
        let taken = try await other.claim(jobs: ["sync"])
        XCTAssertNil(taken, "renewed every third of the lease, the item stays with its holder past the lease")
    }

    func testAReleasedItemIsClaimedAtOnceWithoutATakeover() async throws {
        let stopping = try queue(pid: 10)
        let other = try queue(pid: 20)
        try await stopping.enqueue(job: "sync", accounts: [0], fire: Date())
        let held = try await stopping.claim(jobs: ["sync"])
        let released = try await stopping.release(held!.item)
        XCTAssertTrue(released)
        let next = try await other.claim(jobs: ["sync"])
        XCTAssertEqual(next?.item, held?.item)
        XCTAssertNil(next?.previousHolder, "a handed-back item is not a takeover")
    }

    func testConcurrentClaimersTakeEachItemExactlyOnce() async throws {
        let claimers = try (1...8).map { try queue(pid: Int32($0)) }
        let accounts = (0..<60).map(Int64.init)
        try await claimers[0].enqueue(job: "sync", accounts: accounts, fire: Date())
        let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for claimer in claimers {
                group.addTask {
                    var mine: [Int64] = []
                    while let claim = try await claimer.claim(jobs: ["sync"]) { mine.append(claim.item.account) }
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
