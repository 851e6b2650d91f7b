import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// Several `jobrun schedule` processes, each with its own data root (a host's local state),
/// sharing one PostgreSQL store: every fire of every (job, account) runs once in the cluster,
/// the accounts of a fire are spread over the hosts, and a killed host's item is taken over.
final class ClusterScheduleIntegrationTests: XCTestCase {
    /// The lease the schedule tests run with: short, so a takeover comes within seconds.
    private let leaseSeconds = 3

    /// A host's root whose `cluster.yaml` points at `database` on the shared test server; a host
    /// `beside` another shares its key, as the hosts of one fleet do.
    private func host(
        _ server: PostgresServer, database: String, leaseSeconds: Int? = nil, maxOpenStores: Int? = nil, beside first: JobrunHarness? = nil
    ) throws -> JobrunHarness {
        let h = first.map { JobrunHarness(sharingKeyOf: $0) } ?? JobrunHarness()
        try FileManager.default.createDirectory(atPath: h.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let cluster = h.root + "/cluster.yaml"
        try
            ("postgres:\n  url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)\n"
            + (leaseSeconds.map { "  leaseSeconds: \($0)\n" } ?? "") + (maxOpenStores.map { "  maxOpenStores: \($0)\n" } ?? ""))
            .write(toFile: cluster, atomically: true, encoding: .utf8)
        chmod(cluster, 0o600)
        return h
    }

    /// `count` hosts of one fleet on `database`.
    private func hosts(_ count: Int, _ server: PostgresServer, database: String, leaseSeconds: Int? = nil, maxOpenStores: Int? = nil) throws
        -> [JobrunHarness]
    {
        let first = try host(server, database: database, leaseSeconds: leaseSeconds, maxOpenStores: maxOpenStores)
        return try [first]
            + (1..<count).map { _ in
                try host(server, database: database, leaseSeconds: leaseSeconds, maxOpenStores: maxOpenStores, beside: first)
            }
    }

    /// A `time-based-cleanup` job firing every minute over `accounts`.
    private func writeEveryMinuteJob(_ h: JobrunHarness, accounts: [Int]) throws {
        try h.writeJob(
            "cleanup",
            """
            name: cleanup
            kind: time-based-cleanup
            schedule: "* * * * *"
            timeout: 10m
            concurrencyPolicy: Forbid
            accounts: [\(accounts.map(String.init).joined(separator: ", "))]
            params:
              maxSize: 1GiB
            """)
    }

    /// The `cleanup` runs recorded in `account`'s Postbox on the server, read with `host`'s key;
    /// none while the account's store does not exist yet.
    private func runs(_ server: PostgresServer, database: String, account: Int, readBy host: JobrunHarness) -> [JobRunRecord] {
        let endpoint = PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: database)
        let schema = "jobrun_account_\(account)"
        let recorded = try? Postbox(
            valueBox: PostgresValueBox(endpoint: endpoint, schema: schema, readOnly: true, cipher: host.valueCipher), name: schema, readOnly: true
        ).readSync { try $0.jobRuns.recent(job: "cleanup", limit: 50) }
        return recorded ?? []
    }

    /// The events named `event` in `h`'s logs.
    private func events(_ h: JobrunHarness, _ event: String) -> [[String: Any]] {
        h.logEvents().filter { $0["event"] as? String == event }
    }

    private func due(_ fireMs: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(fireMs) / 1000))
    }

    func testThreeSchedulersRunEachFireOnce() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("sched_\(UUID().uuidString.prefix(8).lowercased())")
        let hosts = try hosts(3, server, database: database)
        for h in hosts {
            // Allow: no run lock, so only the work item keeps the hosts from each running it.
            try h.writeCleanupJob("cleanup", policy: "Allow", schedule: "\"* * * * *\"")
        }
        let schedulers = try hosts.map { try $0.start(["schedule"]) }
        defer { for s in schedulers { s.signal(SIGKILL) } }

        // Wait for the first fire (at most a minute away) to be claimed and finished.
        let deadline = Date().addingTimeInterval(100)
        while Date() < deadline && !runs(server, database: database, account: 0, readBy: hosts[0]).contains(where: { $0.outcome == .succeeded }) {
            Thread.sleep(forTimeInterval: 1)
        }
        Thread.sleep(forTimeInterval: 3)
        for s in schedulers { s.signal(SIGTERM) }
        for s in schedulers { XCTAssertEqual(s.wait(timeout: 60), 0, s.stderr) }

        let recorded = runs(server, database: database, account: 0, readBy: hosts[0])
        XCTAssertFalse(recorded.isEmpty, "a fire ran: \(schedulers.map(\.stderr))")
        // Each minute's fire ran once, whichever host claimed it.
        let minutes = recorded.map { $0.startedAt / 60_000 }
        XCTAssertEqual(minutes.count, Set(minutes).count, "one run per fire in the cluster: \(recorded.map(\.runId))")
        XCTAssertEqual(recorded.compactMap(\.fireAt).count, recorded.count, "a claimed run records its fire")
        // One account: each fire is one item, claimed by one host and reported by the two others.
        let skipped = hosts.map { h in events(h, "scheduler.claimed_elsewhere").count }
        XCTAssertEqual(skipped.reduce(0, +), 2 * recorded.count, "the two other hosts saw each fire claimed: \(skipped)")
    }

    func testSixAccountsAreSpreadOverThreeSchedulersAndEachRunsOncePerFire() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("spread_\(UUID().uuidString.prefix(8).lowercased())")
        let accounts = Array(0..<6)
        let hosts = try hosts(3, server, database: database, leaseSeconds: leaseSeconds)
        for h in hosts { try writeEveryMinuteJob(h, accounts: accounts) }
        // Each account's run takes 1.5 s, so no host can drain the fire before the others claim.
        let schedulers = try hosts.map { try $0.start(["schedule"], failpoints: "after-lock=sleep(1500)") }
        defer { for s in schedulers { s.signal(SIGKILL) } }

        func succeededFires() -> [Int: [Int64]] {
            Dictionary(
                uniqueKeysWithValues: accounts.map { a in
                    (a, runs(server, database: database, account: a, readBy: hosts[0]).filter { $0.outcome == .succeeded }.compactMap(\.fireAt))
                })
        }
        let deadline = Date().addingTimeInterval(110)
        while Date() < deadline, succeededFires().values.contains(where: \.isEmpty) { Thread.sleep(forTimeInterval: 1) }
        for s in schedulers { s.signal(SIGTERM) }
        for s in schedulers { XCTAssertEqual(s.wait(timeout: 60), 0, s.stderr) }

        let records = Dictionary(uniqueKeysWithValues: accounts.map { ($0, runs(server, database: database, account: $0, readBy: hosts[0])) })
        let firstFire = try XCTUnwrap(records.values.flatMap { $0 }.compactMap(\.fireAt).min(), "a fire ran: \(schedulers.map(\.stderr))")
        var ranBy = [Int](repeating: 0, count: hosts.count)
        for (account, recorded) in records {
            let ofFirst = recorded.filter { $0.fireAt == firstFire }
            XCTAssertEqual(ofFirst.count, 1, "account \(account) ran once for the fire: \(ofFirst)")
            XCTAssertEqual(ofFirst.first?.outcome, .succeeded)
            XCTAssertEqual(ofFirst.first?.host, ProcessInfo.processInfo.hostName, "a cluster run names its host")
            if let pid = ofFirst.first?.pid, let index = schedulers.firstIndex(where: { $0.pid == pid }) { ranBy[index] += 1 }
            let succeeded = recorded.filter { $0.outcome == .succeeded }.compactMap(\.fireAt)
            XCTAssertEqual(succeeded.count, Set(succeeded).count, "no fire of account \(account) succeeded twice")
        }
        XCTAssertEqual(ranBy.reduce(0, +), accounts.count, "each run was made by one of the schedulers: \(ranBy)")
        XCTAssertTrue(ranBy.allSatisfy { $0 >= 1 && $0 < accounts.count }, "the accounts are spread over the hosts: \(ranBy)")

        // Every host accounts for each of the fire's items once: claimed by it, or elsewhere.
        for (index, h) in hosts.enumerated() {
            let claimed = events(h, "scheduler.claimed").filter { $0["due"] as? String == due(firstFire) }.count
            let elsewhere = events(h, "scheduler.claimed_elsewhere").filter { $0["due"] as? String == due(firstFire) }.count
            XCTAssertEqual(claimed, ranBy[index], "host \(index) logged a claim per account it ran")
            XCTAssertEqual(claimed + elsewhere, accounts.count, "host \(index) saw every item of the fire claimed once")
        }
    }

    /// Two schedulers run one fire of a job over more accounts than the server takes connections:
    /// each keeps at most `maxOpenStores` account stores open, so every account's run succeeds
    /// and the server's sessions on the database stay within the hosts' bounds throughout.
    func testManyAccountsStayWithinTheServersConnectionsByClosingIdleStores() throws {
        let maxConnections = 20
        let maxOpenStores = 3
        let server = try PostgresServer(maxConnections: maxConnections)
        let database = try server.createDatabase("bound_\(UUID().uuidString.prefix(8).lowercased())")
        let accounts = Array(0..<40)  // twice the server's connections
        let hosts = try hosts(2, server, database: database, maxOpenStores: maxOpenStores)
        for h in hosts { try writeEveryMinuteJob(h, accounts: accounts) }
        let schedulers = try hosts.map { try $0.start(["schedule"]) }
        defer { for s in schedulers { s.signal(SIGKILL) } }

        func sessions() -> Int {
            Int(
                (try? server.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)'"))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            ) ?? 0
        }
        func finished() -> Int {
            let lines = hosts.flatMap { events($0, "run.finished") }
            return lines.filter { $0["outcome"] as? String == "succeeded" }.count
        }
        var most = 0
        let deadline = Date().addingTimeInterval(200)
        while Date() < deadline, finished() < accounts.count {
            most = max(most, sessions())
            Thread.sleep(forTimeInterval: 0.2)
        }
        most = max(most, sessions())
        for s in schedulers { s.signal(SIGTERM) }
        for s in schedulers { XCTAssertEqual(s.wait(timeout: 60), 0, s.stderr) }

        let failed = hosts.flatMap { events($0, "run.finished") }.filter { $0["outcome"] as? String != "succeeded" }
        XCTAssertEqual(failed.count, 0, "no run failed: \(failed)")
        let succeeded = accounts.filter { a in runs(server, database: database, account: a, readBy: hosts[0]).contains { $0.outcome == .succeeded } }
        XCTAssertEqual(succeeded.count, accounts.count, "every account's run succeeded: \(schedulers.map(\.stderr))")
        // Each host: its open account stores, plus the work queue's session, its listener and
        // the running account's run lock (concurrencyPolicy Forbid); and one session per host of
        // slack, for a store just closed whose server process has not exited yet on a loaded
        // machine. Without the bound the sessions reach the server's limit and runs fail.
        let bound = hosts.count * (maxOpenStores + 3 + 1)
        print(
            "many accounts: \(accounts.count) accounts, \(hosts.count) schedulers, maxOpenStores \(maxOpenStores): at most \(most) sessions (bound \(bound), max_connections \(maxConnections))"
        )
        XCTAssertGreaterThan(most, 0, "the sessions were seen")
        XCTAssertLessThanOrEqual(most, bound, "the hosts' sessions stay within maxOpenStores each")
    }

    func testASchedulerStoppedBySIGTERMHandsItsItemOverAtOnce() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("handover_\(UUID().uuidString.prefix(8).lowercased())")
        // A lease far longer than the hand-over may take: only the item handed back (and the
        // news of it) lets the other host run it so soon.
        let lease = 60
        let hosts = try hosts(2, server, database: database, leaseSeconds: lease)
        for h in hosts { try writeEveryMinuteJob(h, accounts: [0]) }
        let stopping = try hosts[0].start(["schedule"], failpoints: "after-start-record=sleep(120000)")
        defer { stopping.signal(SIGKILL) }
        var held: [String: Any]?
        let deadline = Date().addingTimeInterval(100)
        while Date() < deadline, held == nil {
            held = events(hosts[0], "scheduler.claimed").first
            Thread.sleep(forTimeInterval: 0.2)
        }
        let claim = try XCTUnwrap(held, "the first host claimed the item: \(stopping.stderr)")
        while Date() < deadline, !runs(server, database: database, account: 0, readBy: hosts[0]).contains(where: { $0.pid == stopping.pid }) {
            Thread.sleep(forTimeInterval: 0.1)
        }
        // The second host starts with the item held: it has nothing to do until it is handed over.
        let taking = try hosts[1].start(["schedule"])
        defer { taking.signal(SIGKILL) }
        Thread.sleep(forTimeInterval: 3)
        XCTAssertTrue(events(hosts[1], "scheduler.claimed").isEmpty, "the item is held: \(taking.stderr)")

        stopping.signal(SIGTERM)
        let signalled = Date()
        var handedOver: TimeInterval?
        while Date() < signalled.addingTimeInterval(Double(lease)), handedOver == nil {
            if events(hosts[1], "scheduler.claimed").contains(where: { $0["due"] as? String == claim["due"] as? String }) {
                handedOver = Date().timeIntervalSince(signalled)
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTAssertEqual(stopping.wait(timeout: 60), 0, stopping.stderr)
        let after = try XCTUnwrap(handedOver, "the other host claimed the handed-back item: \(taking.stderr)")
        print("cluster hand-over: SIGTERM'd scheduler's item claimed by another host \(String(format: "%.2f", after)) s after the signal (lease \(lease) s)")
        // Far below the lease (60 s) and the poll interval (5 s): the item was handed back, and the
        // idle host heard of it at once.
        XCTAssertLessThan(after, 4, "handed over at once, not at the lease or the next poll")
        XCTAssertTrue(events(hosts[1], "scheduler.took_over").isEmpty, "handed back, not taken over from an expired lease")

        while Date() < signalled.addingTimeInterval(60),
            !runs(server, database: database, account: 0, readBy: hosts[0]).contains(where: { $0.pid == taking.pid && $0.outcome == .succeeded })
        {
            Thread.sleep(forTimeInterval: 0.2)
        }
        taking.signal(SIGTERM)
        XCTAssertEqual(taking.wait(timeout: 60), 0, taking.stderr)
        let recorded = runs(server, database: database, account: 0, readBy: hosts[0])
        XCTAssertEqual(recorded.first { $0.pid == stopping.pid }?.outcome, .cancelled, "the stopped host's run ended as cancelled: \(recorded)")
        XCTAssertTrue(
            recorded.contains { $0.pid == taking.pid && $0.outcome == .succeeded && $0.fireAt == recorded.first { $0.pid == stopping.pid }?.fireAt },
            "the other host ran the same fire: \(recorded)")
    }

    func testAKilledSchedulersItemIsTakenOverWithinTheLease() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("takeover_\(UUID().uuidString.prefix(8).lowercased())")
        let accounts = Array(0..<6)
        let hosts = try hosts(3, server, database: database, leaseSeconds: leaseSeconds)
        for h in hosts { try writeEveryMinuteJob(h, accounts: accounts) }
        // The first host's runs block, once recorded as running, until it is killed; the
        // others' take half a second.
        let victim = try hosts[0].start(["schedule"], failpoints: "after-start-record=sleep(120000)")
        let others = try hosts[1...].map { try $0.start(["schedule"], failpoints: "after-lock=sleep(500)") }
        defer { for s in [victim] + others { s.signal(SIGKILL) } }

        var held: [String: Any]?
        let deadline = Date().addingTimeInterval(100)
        while Date() < deadline, held == nil {
            held = events(hosts[0], "scheduler.claimed").first
            Thread.sleep(forTimeInterval: 0.2)
        }
        let claim = try XCTUnwrap(held, "the first host claimed an item: \(victim.stderr)")
        let account = try XCTUnwrap(claim["account"] as? Int)
        // Its run is under way (recorded, holding the account's run lock) when it is killed.
        while Date() < deadline, !runs(server, database: database, account: account, readBy: hosts[0]).contains(where: { $0.pid == victim.pid }) {
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTAssertTrue(runs(server, database: database, account: account, readBy: hosts[0]).contains { $0.pid == victim.pid && $0.outcome == .running })
        victim.signal(SIGKILL)
        victim.wait()
        let killed = Date()

        var tookOver: [String: Any]?
        var tookOverAfter: TimeInterval = 0
        while Date() < killed.addingTimeInterval(60), tookOver == nil {
            tookOver = hosts[1...].flatMap { events($0, "scheduler.took_over") }.first
            tookOverAfter = Date().timeIntervalSince(killed)
            Thread.sleep(forTimeInterval: 0.2)
        }
        let takeover = try XCTUnwrap(tookOver, "another host took the item over: \(others.map(\.stderr))")
        XCTAssertEqual(takeover["account"] as? Int, account)
        XCTAssertEqual(takeover["due"] as? String, claim["due"] as? String)
        XCTAssertTrue((takeover["previous_holder"] as? String)?.hasPrefix("pid \(victim.pid) on ") == true, "\(takeover)")
        XCTAssertTrue((takeover["msg"] as? String)?.contains("took over the fire at") == true, "a journal reads it in words: \(takeover)")
        print("cluster takeover: item of a killed scheduler taken over \(String(format: "%.1f", tookOverAfter)) s after the kill (lease \(leaseSeconds) s)")
        // The lease (3 s) plus the poll interval (1 s), plus the test's own polling and a slack.
        XCTAssertLessThan(tookOverAfter, Double(leaseSeconds) + 1 + 3, "taken over within the lease bound")

        let fireDeadline = Date().addingTimeInterval(60)
        func done() -> Bool {
            accounts.allSatisfy { a in
                runs(server, database: database, account: a, readBy: hosts[0]).contains { $0.outcome == .succeeded && $0.fireAt != nil }
            }
        }
        while Date() < fireDeadline, !done() { Thread.sleep(forTimeInterval: 0.5) }
        for s in others { s.signal(SIGTERM) }
        for s in others { XCTAssertEqual(s.wait(timeout: 60), 0, s.stderr) }

        for a in accounts {
            let recorded = runs(server, database: database, account: a, readBy: hosts[0])
            let fire = try XCTUnwrap(recorded.compactMap(\.fireAt).min())
            let succeeded = recorded.filter { $0.fireAt == fire && $0.outcome == .succeeded }
            XCTAssertEqual(succeeded.count, 1, "account \(a)'s fire completed once: \(recorded)")
            XCTAssertNotEqual(succeeded.first?.pid, victim.pid)
        }
        let abandoned = runs(server, database: database, account: account, readBy: hosts[0]).filter { $0.pid == victim.pid }
        XCTAssertEqual(abandoned.map(\.outcome), [.failed], "the killed run is closed by the host that took over")
        XCTAssertTrue(abandoned.first?.message?.contains("abandoned") == true, "\(abandoned)")
        XCTAssertEqual(
            try server.psql("SELECT claims FROM jobrun_cluster.work_items WHERE account = \(account) ORDER BY fire_ms LIMIT 1", database: database), "2",
            "the item was claimed by the killed host, then by the one that took it over")
    }
}
