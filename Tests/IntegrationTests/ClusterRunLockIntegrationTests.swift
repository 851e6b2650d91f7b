import Foundation
import TestSupport
import XCTest

/// The run lock across hosts: two data roots (two hosts' local state) sharing one PostgreSQL
/// store, each running the built `jobrun`.
final class ClusterRunLockIntegrationTests: XCTestCase {
    /// A root whose `cluster.yaml` points at `database` on the shared test server; a host
    /// `beside` another shares its key, as the hosts of one fleet do.
    private func host(_ database: String, server: PostgresServer, policy: String, beside first: JobrunHarness? = nil) throws -> JobrunHarness {
        let h = first.map { JobrunHarness(sharingKeyOf: $0) } ?? JobrunHarness()
        try FileManager.default.createDirectory(atPath: h.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let cluster = h.root + "/cluster.yaml"
        try "postgres:\n  url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)\n"
            .write(toFile: cluster, atomically: true, encoding: .utf8)
        chmod(cluster, 0o600)
        try h.writeCleanupJob("cleanup", policy: policy)
        return h
    }

    /// A fresh database, two hosts on it whose `cleanup` job has `policy`, and the first host's
    /// run of it holding the cluster lock (asleep just after taking it): the second host and the
    /// holder.
    private func twoHostsWithAHolder(policy: String) throws -> (b: JobrunHarness, holder: ChildProcess) {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("lock_\(UUID().uuidString.prefix(8).lowercased())")
        let a = try host(database, server: server, policy: policy)
        let b = try host(database, server: server, policy: policy, beside: a)
        let holder = try a.start(["run", "cleanup"], failpoints: "after-lock=sleep(60000)")
        XCTAssertTrue(waitForClusterLock(server, database: database), "host a took the cluster lock: \(holder.stderr)")
        return (b, holder)
    }

    /// Whether some session holds a job's cluster run lock (an advisory lock of the run-lock
    /// class) within 60 s.
    private func waitForClusterLock(_ server: PostgresServer, database: String) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let granted = try? server.psql(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(0x524C_0001) AND granted", database: database)
            if granted == "1" { return true }
            usleep(100_000)
        }
        return false
    }

    func testForbidAcrossHostsAndAKilledHolderFreesTheLockAtOnce() throws {
        let (b, holder) = try twoHostsWithAHolder(policy: "Forbid")
        defer { holder.signal(SIGKILL) }

        let skipped = try b.run(["run", "cleanup", "-v"])
        XCTAssertEqual(skipped.status, 75, "another host's run holds the lock: \(skipped.stderr)")
        XCTAssertTrue(skipped.stderr.contains("already running (pid \(holder.pid) on "), skipped.stderr)

        // The holder dies without any cleanup: its session ends, the lock is free at once.
        holder.signal(SIGKILL)
        holder.wait()
        let next = try b.run(["run", "cleanup"])
        XCTAssertEqual(next.status, 0, next.stderr)
    }

    func testReplaceAcrossHostsStopsTheHolder() throws {
        let (b, holder) = try twoHostsWithAHolder(policy: "Replace")
        defer { holder.signal(SIGKILL) }
        let started = Date()
        let replacing = try b.run(["run", "cleanup"])
        XCTAssertEqual(replacing.status, 0, replacing.stderr)
        // The replaced holder notices its lost session within its watchdog interval and stops.
        let status = holder.wait(timeout: 30)
        XCTAssertNotEqual(status, 0, "the replaced run does not finish as if nothing happened: \(holder.stderr)")
        XCTAssertTrue(b.logEvents().contains { $0["event"] as? String == "run.replacing" }, b.allLogText())
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
    }

    /// The lock is per (job, account): runs of the same job over different accounts go ahead
    /// side by side; a run that shares an account with a running one is refused (75).
    func testForbidLocksEachAccountOfAJobApart() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("lock_\(UUID().uuidString.prefix(8).lowercased())")
        func job(_ h: JobrunHarness, accounts: String) throws {
            try h.writeJob(
                "cleanup",
                """
                name: cleanup
                kind: time-based-cleanup
                timeout: 10m
                concurrencyPolicy: Forbid
                accounts: \(accounts)
                params:
                  maxSize: 1GiB
                """)
        }
        let a = try host(database, server: server, policy: "Forbid")
        let b = try host(database, server: server, policy: "Forbid", beside: a)
        let c = try host(database, server: server, policy: "Forbid", beside: a)
        try job(a, accounts: "[1]")
        try job(b, accounts: "[2]")
        try job(c, accounts: "[2, 1]")

        let holder = try a.start(["run", "cleanup"], failpoints: "after-lock=sleep(60000)")
        defer { holder.signal(SIGKILL) }
        XCTAssertTrue(waitForClusterLock(server, database: database), "host a took account 1's lock: \(holder.stderr)")

        let other = try b.run(["run", "cleanup"])
        XCTAssertEqual(other.status, 0, "another account of the same job runs at the same time: \(other.stderr)")
        let overlapping = try c.run(["run", "cleanup", "-v"])
        XCTAssertEqual(overlapping.status, 75, "a run sharing account 1 is refused: \(overlapping.stderr)")
        XCTAssertTrue(overlapping.stderr.contains("already running (pid \(holder.pid) on "), overlapping.stderr)
        XCTAssertTrue(overlapping.stderr.contains("account 1"), "the message names the account held: \(overlapping.stderr)")
        XCTAssertEqual(
            try server.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(0x524C_0001) AND granted", database: database), "1",
            "the refused run let go of account 2's lock it had taken")

        holder.signal(SIGKILL)
        holder.wait()
        let both = try c.run(["run", "cleanup"])
        XCTAssertEqual(both.status, 0, "by hand, a run takes every account's lock: \(both.stderr)")
    }

    /// A scheduler whose run is replaced from another host loses that run only: the scheduler
    /// itself goes on (it would otherwise stop every run it has, and exit, at each `Replace` or
    /// server restart).
    func testAReplacedRunInASchedulerCancelsThatRunNotTheScheduler() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("lock_\(UUID().uuidString.prefix(8).lowercased())")
        let a = try host(database, server: server, policy: "Replace")
        let b = try host(database, server: server, policy: "Replace", beside: a)
        let scheduler = try a.start(["schedule", "--now"], failpoints: "after-start-record=sleep(60000)")
        defer { scheduler.signal(SIGKILL) }
        XCTAssertTrue(waitForClusterLock(server, database: database), "the scheduler's run took the cluster lock: \(scheduler.stderr)")

        let replacing = try b.run(["run", "cleanup"])
        XCTAssertEqual(replacing.status, 0, replacing.stderr)
        let deadline = Date().addingTimeInterval(30)
        func cancelled() -> Bool {
            a.logEvents().contains { $0["event"] as? String == "run.finished" && $0["outcome"] as? String == "cancelled" }
        }
        while Date() < deadline, !cancelled() { usleep(200_000) }
        XCTAssertTrue(cancelled(), "the replaced run ended as cancelled: \(scheduler.stderr)")
        usleep(500_000)
        XCTAssertTrue(scheduler.isRunning, "the scheduler goes on after losing one run's lock: \(scheduler.stderr)")
        XCTAssertFalse(a.logEvents().contains { $0["event"] as? String == "scheduler.stopping" }, a.allLogText())
        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(timeout: 30), 0, scheduler.stderr)
    }
}
