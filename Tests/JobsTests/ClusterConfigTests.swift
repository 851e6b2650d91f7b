import Foundation
import Jobs
import PostboxPostgres
import XCTest

/// `<root>/cluster.yaml` and the `JOBRUN_POSTGRES_*` variables: what they choose, and clear
/// refusals that never show a secret.
final class ClusterConfigTests: XCTestCase {
    private func root() throws -> DataRoot {
        let url = try TestPaths.makeTempDirectory()
        chmod(url.path, 0o700)
        return DataRoot(url: url)
    }

    func testNoFileNoVariablesKeepsSQLite() throws {
        let config = try ClusterConfig.load(root: try root(), environment: [:])
        XCTAssertNil(config.postgres)
        XCTAssertFalse(config.isShared)
    }

    func testPostgresSectionAndObjectStorageKeptRaw() throws {
        let config = try ClusterConfig.parse(
            """
            postgres:
              url: postgresql://jobrun@db.internal:6432/fleet
              passwordFile: secrets/pg
              tls: {mode: verify-full, caFile: /etc/ca.pem}
              schemaPrefix: prod
            objectStorage:
              bucket: media
              anything: [goes, here]
            """, path: "/r/cluster.yaml", rootDirectory: "/r")
        let pg = try XCTUnwrap(config.postgres)
        XCTAssertEqual(pg.address, .tcp(host: "db.internal", port: 6432))
        XCTAssertEqual(pg.username, "jobrun")
        XCTAssertEqual(pg.database, "fleet")
        XCTAssertEqual(pg.passwordFile, "/r/secrets/pg", "relative paths resolve against the root")
        XCTAssertEqual(pg.tls, .verifyFull)
        XCTAssertEqual(pg.caFile, "/etc/ca.pem")
        XCTAssertEqual(pg.schema(account: 42), "prod_account_42")
        XCTAssertEqual(pg.account(schema: "prod_account_42"), 42)
        XCTAssertNil(pg.account(schema: "other_account_42"))
        guard case .mapping(let entries) = config.objectStorage?.value else { return XCTFail("objectStorage kept as a mapping") }
        XCTAssertEqual(entries.map(\.key), ["bucket", "anything"])
    }

    func testUnixSocketURL() throws {
        let config = try ClusterConfig.parse(
            "postgres:\n  url: postgresql:///jobs?host=/run/postgresql&port=5433&user=svc\n", path: "c", rootDirectory: "/")
        XCTAssertEqual(config.postgres?.address, .unixSocket(path: "/run/postgresql/.s.PGSQL.5433"))
        XCTAssertEqual(config.postgres?.username, "svc")
    }

    func testBadInputNamesFileLineAndKeyButNeverTheSecret() throws {
        XCTAssertThrowsError(try ClusterConfig.parse("postgress:\n  url: x\n", path: "/r/cluster.yaml", rootDirectory: "/r")) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("/r/cluster.yaml:1:1") && text.contains("unknown key `postgress`"), text)
        }
        XCTAssertThrowsError(
            try ClusterConfig.parse("postgres:\n  url: postgresql://u:hunter2@h/db\n", path: "/r/cluster.yaml", rootDirectory: "/r")
        ) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("passwordFile"), text)
            XCTAssertFalse(text.contains("hunter2"), "the password in a URL is never repeated")
        }
        XCTAssertThrowsError(try ClusterConfig.parse("postgres:\n  url: postgresql://h/db\n  tls: maybe\n", path: "c", rootDirectory: "/")) {
            XCTAssertTrue("\($0)".contains("disable, require, verify-full"), "\($0)")
        }
        XCTAssertThrowsError(try ClusterConfig.parse("postgres:\n  url: postgresql://h/\n", path: "c", rootDirectory: "/")) {
            XCTAssertTrue("\($0)".contains("must name the database"), "\($0)")
        }
    }

    func testFileReadableByOthersIsRefused() throws {
        let root = try root()
        let file = root.path + "/cluster.yaml"
        try "postgres:\n  url: postgresql://h/db\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        XCTAssertThrowsError(try ClusterConfig.load(root: root, environment: [:])) {
            XCTAssertTrue("\($0)".contains("chmod 600 \(file)"), "\($0)")
        }
        chmod(file, 0o600)
        XCTAssertEqual(try ClusterConfig.load(root: root, environment: [:]).postgres?.database, "db")
    }

    func testVariablesOverrideTheFileAndPasswordFileMustBePrivate() throws {
        let root = try root()
        let config = try ClusterConfig.load(
            root: root,
            environment: [
                "JOBRUN_POSTGRES_URL": "postgresql://svc@10.0.0.5/jobs", "JOBRUN_POSTGRES_TLS_MODE": "require",
                "JOBRUN_POSTGRES_SCHEMA_PREFIX": "blue",
            ])
        let pg = try XCTUnwrap(config.postgres)
        XCTAssertEqual(pg.address, .tcp(host: "10.0.0.5", port: 5432))
        XCTAssertEqual(pg.tls, .require)
        XCTAssertEqual(pg.schema(account: 1), "blue_account_1")
        XCTAssertThrowsError(try ClusterConfig.load(root: root, environment: ["JOBRUN_POSTGRES_TLS_MODE": "require"])) {
            XCTAssertTrue("\($0)".contains("JOBRUN_POSTGRES_URL"), "\($0)")
        }

        let secretFile = root.path + "/pg-password"
        try "s3cr3t-value\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        chmod(secretFile, 0o644)
        var withFile = pg
        withFile.passwordFile = secretFile
        XCTAssertThrowsError(try withFile.endpoint()) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("chmod 600"), text)
            XCTAssertFalse(text.contains("s3cr3t-value"))
        }
        chmod(secretFile, 0o600)
        let endpoint = try withFile.endpoint()
        XCTAssertEqual(endpoint.password, "s3cr3t-value")
        XCTAssertFalse("\(endpoint)".contains("s3cr3t-value"), "an endpoint prints without its password")
    }
}

/// `postgres.leaseSeconds`: the bound after which another scheduler takes over a dead host's work.
final class ClusterLeaseConfigTests: XCTestCase {
    func testLeaseDefaultsToThirtySecondsAndIsRead() throws {
        let plain = try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n", path: "c", rootDirectory: "/")
        XCTAssertEqual(plain.postgres?.leaseSeconds, 30)
        let short = try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  leaseSeconds: 4\n", path: "c", rootDirectory: "/")
        XCTAssertEqual(short.postgres?.leaseSeconds, 4)
    }

    func testLeaseOutOfRangeOrNotANumberIsRefusedWithItsLine() throws {
        for bad in ["1", "3601", "ten", "2.5"] {
            XCTAssertThrowsError(
                try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  leaseSeconds: \(bad)\n", path: "/r/cluster.yaml", rootDirectory: "/r")
            ) {
                let text = "\($0)"
                XCTAssertTrue(
                    text.contains("/r/cluster.yaml:3:") && text.contains("`postgres.leaseSeconds` must be a whole number of seconds from 2 to 3600"), text)
            }
        }
    }
}
