import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// Several `jobrun schedule` processes, each with its own data root (a host's local state),
/// sharing one PostgreSQL store: every fire of a job runs once in the cluster.
final class ClusterScheduleIntegrationTests: XCTestCase {
    func testThreeSchedulersRunEachFireOnce() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("sched_\(UUID().uuidString.prefix(8).lowercased())")
        var hosts: [JobrunHarness] = []
        for _ in 0..<3 {
            let h = JobrunHarness()
            try FileManager.default.createDirectory(atPath: h.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let cluster = h.root + "/cluster.yaml"
            try "postgres:\n  url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)\n"
                .write(toFile: cluster, atomically: true, encoding: .utf8)
            chmod(cluster, 0o600)
            // Allow: no run lock, so only the fire claim keeps the hosts from each running it.
            try h.writeCleanupJob("cleanup", policy: "Allow", schedule: "\"* * * * *\"")
            hosts.append(h)
        }
        let schedulers = try hosts.map { try $0.start(["schedule"]) }
        defer { for s in schedulers { s.signal(SIGKILL) } }

        // Wait for the first fire (at most a minute away) to be claimed and finished.
        let endpoint = PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: database)
        func runs() -> [JobRunRecord] {
            guard let box = try? PostgresValueBox(endpoint: endpoint, schema: "jobrun_account_0", readOnly: true),
                let postbox = try? Postbox(valueBox: box, name: "jobrun_account_0", readOnly: true)
            else { return [] }
            return (try? postbox.readSync { try $0.jobRuns.recent(job: "cleanup", limit: 20) }) ?? []
        }
        let deadline = Date().addingTimeInterval(100)
        while Date() < deadline && !runs().contains(where: { $0.outcome == .succeeded }) { Thread.sleep(forTimeInterval: 1) }
        Thread.sleep(forTimeInterval: 3)
        for s in schedulers { s.signal(SIGTERM) }
        for s in schedulers { XCTAssertEqual(s.wait(timeout: 60), 0, s.stderr) }

        let recorded = runs()
        XCTAssertFalse(recorded.isEmpty, "a fire ran: \(schedulers.map(\.stderr))")
        // Each minute's fire ran once, whichever host claimed it.
        let minutes = recorded.map { $0.startedAt / 60_000 }
        XCTAssertEqual(minutes.count, Set(minutes).count, "one run per fire in the cluster: \(recorded.map(\.runId))")
        let skipped = hosts.map { h in h.logEvents().filter { $0["event"] as? String == "scheduler.claimed_elsewhere" }.count }
        XCTAssertEqual(skipped.reduce(0, +), 2 * recorded.count, "the two other hosts saw each fire claimed: \(skipped)")
    }
}
