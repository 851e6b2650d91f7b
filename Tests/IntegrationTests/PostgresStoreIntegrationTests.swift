import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// The built `jobrun` with its Postbox on PostgreSQL (`<root>/cluster.yaml`): a real server
/// started by the test, a real `cloudd`, jobs, `status` and `stats` as an operator runs them.
final class PostgresStoreIntegrationTests: XCTestCase {
    func testJobsStatusAndStatsRunOnPostgres() throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("it_\(UUID().uuidString.prefix(8).lowercased())")
        let cloud = try startCloudd(["--seed", "7", "--dcs", "1", "--peers", "3", "--messages-per-peer", "8", "--cdn-fraction", "0"])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try FileManager.default.createDirectory(atPath: h.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let passwordFile = h.dir.file("pg-password")
        let secret = "pg-secret-\(UUID().uuidString.prefix(8))"
        try "\(secret)\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        chmod(passwordFile, 0o600)
        let cluster = h.root + "/cluster.yaml"
        try """
        postgres:
          url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)
          passwordFile: \(passwordFile)
          schemaPrefix: fleet
        """.write(toFile: cluster, atomically: true, encoding: .utf8)
        try h.writeSyncJob(initialMessages: 5)

        // Others may read the file: refused (78), naming it, before anything is opened.
        chmod(cluster, 0o644)
        let open = try h.run(["run", "sync"])
        XCTAssertEqual(open.status, 78, open.stderr)
        XCTAssertTrue(open.stderr.contains("cluster.yaml") && open.stderr.contains("chmod 600"), open.stderr)
        chmod(cluster, 0o600)

        let first = try h.run(["run", "sync", "-v"])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdout.contains("messages_stored: 15"), first.stdout)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: h.account + "/postbox/db/db.sqlite"), "the shared store replaces the SQLite file")

        // The rows are in the account's schema on the server.
        let endpoint = PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: database)
        let postbox = try Postbox(
            valueBox: try PostgresValueBox(endpoint: endpoint, schema: "fleet_account_0", readOnly: true, cipher: h.valueCipher), name: "fleet_account_0",
            readOnly: true)
        let (peers, runs) = try postbox.readSync { tx in (try tx.peers.count(), try tx.jobRuns.recent(job: "sync", limit: 5)) }
        XCTAssertEqual(peers, 3)
        XCTAssertEqual(runs.map(\.outcome), [.succeeded])

        // A second run sees what the first stored: nothing new.
        let second = try h.run(["run", "sync", "-v"])
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertTrue(second.stdout.contains("messages_stored: 0"), second.stdout)

        let status = try h.run(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("sync"), status.stdout)
        let stats = try h.run(["stats"])
        XCTAssertEqual(stats.status, 0, stats.stderr)
        // The database's usage comes from the server: live rows per table, beside its disk.
        let usage = try h.run(["stats", "--database"])
        XCTAssertEqual(usage.status, 0, usage.stderr)
        XCTAssertTrue(usage.stdout.contains("account 0: live rows "), usage.stdout)
        XCTAssertTrue(usage.stdout.contains("messages"), usage.stdout)
        XCTAssertFalse(usage.stdout.contains(secret), "the store names its schema, never the URL's password")

        XCTAssertFalse(h.allLogText().contains(secret), "the password never reaches a log")
        XCTAssertFalse(first.stderr.contains(secret) || status.stdout.contains(secret))
    }
}
