import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// A fleet's stores on PostgreSQL under the root's key: every value is sealed before it leaves
/// the host, so the server's data directory (its tables, its WAL) holds no message text and no
/// file reference, while keys, ids and sizes stay visible to the server.
final class FleetEncryptionIntegrationTests: XCTestCase {
    func testTheServersDataDirectoryHoldsNoMessageTextOrFileReference() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let database = try server.createDatabase("sealed")
        let cloud = try startCloudd(["--seed", "13", "--dcs", "1", "--peers", "3", "--messages-per-peer", "10", "--cdn-fraction", "0"])
        let h = JobrunHarness(root: .plaintext)  // `init --encrypt` below makes its key
        try h.configureAccount(for: cloud)
        try FileManager.default.createDirectory(atPath: h.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let cluster = h.root + "/cluster.yaml"
        try """
        postgres:
          url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)
          schemaPrefix: fleet
        """.write(toFile: cluster, atomically: true, encoding: .utf8)
        chmod(cluster, 0o600)
        let initialized = try h.run(["init", "--encrypt"])
        XCTAssertEqual(initialized.status, 0, initialized.stderr)
        try h.syncOnce(initialMessages: 8)

        let key = try EncryptedRoot.key(h.root + "/keys/store.key")
        let endpoint = PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: database)
        let box = try PostgresValueBox(endpoint: endpoint, schema: "fleet_account_0", readOnly: true, cipher: try ValueCipher(storeKey: key))
        let (texts, references) = try EncryptedRoot.secrets(try Postbox(valueBox: box, name: "fleet_account_0", readOnly: true))
        XCTAssertGreaterThan(texts.count, 5)
        XCTAssertGreaterThan(references.count, 0)

        XCTAssertThrowsError(try PostgresValueBox(endpoint: endpoint, schema: "fleet_account_0", readOnly: true)) { error in
            XCTAssertEqual(error as? PostboxError, .keyRequired(path: "postgres:fleet_account_0"))
        }
        XCTAssertThrowsError(
            try PostgresValueBox(endpoint: endpoint, schema: "fleet_account_0", readOnly: true, cipher: try ValueCipher(storeKey: StoreKey.random()))
        ) { error in
            XCTAssertEqual(error as? PostboxError, .wrongKey(path: "postgres:fleet_account_0"))
        }
        let status = try h.run(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("encrypted at rest"), status.stdout)
        try FileManager.default.moveItem(atPath: h.root + "/keys/store.key", toPath: h.dir.file("kept.key"))
        let withoutKey = try h.run(["run", "sync"])
        XCTAssertEqual(withoutKey.status, 78, withoutKey.stderr)
        XCTAssertTrue(withoutKey.stderr.contains("encrypted"), withoutKey.stderr)

        // Everything the server keeps is on disk once it stops (a shutdown checkpoint).
        server.stop()
        let found = EncryptedRoot.filesContaining(texts.map { Data($0.utf8) } + references, under: server.dataDirectory)
        XCTAssertEqual(found, [], "message texts or file references in the PostgreSQL data directory")
        let visible = EncryptedRoot.filesContaining([Data("valuebox_key_check".utf8)], under: server.dataDirectory)
        XCTAssertFalse(visible.isEmpty, "the search reads the server's files: the schema's table names are there")
    }
}
