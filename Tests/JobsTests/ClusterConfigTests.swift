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

    func testPostgresAndObjectStorageSections() throws {
        let config = try ClusterConfig.parse(
            """
            postgres:
              url: postgresql://jobrun@db.internal:6432/fleet
              passwordFile: secrets/pg
              tls: {mode: verify-full, caFile: /etc/ca.pem}
              schemaPrefix: prod
            objectStorage:
              endpoint: http://127.0.0.1:9000
              bucket: media
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
        XCTAssertEqual(config.objectStorage?.bucket.name, "media")
        XCTAssertThrowsError(
            try ClusterConfig.parse("objectStorage:\n  bucket: media\n  endpont: http://h\n", path: "/r/cluster.yaml", rootDirectory: "/r")
        ) {
            XCTAssertTrue("\($0)".contains("/r/cluster.yaml:3:3: unknown key 'endpont' in objectStorage; did you mean 'endpoint'?"), "\($0)")
        }
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
            XCTAssertTrue(text.contains("/r/cluster.yaml:1:1: unknown key 'postgress'; did you mean 'postgres'?"), text)
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

/// `postgres.lease`: the bound after which another scheduler takes over a dead host's work.
final class ClusterLeaseConfigTests: XCTestCase {
    func testLeaseDefaultsToThirtySecondsAndIsRead() throws {
        let plain = try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n", path: "c", rootDirectory: "/")
        XCTAssertEqual(plain.postgres?.leaseSeconds, 30)
        let short = try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  lease: 4s\n", path: "c", rootDirectory: "/")
        XCTAssertEqual(short.postgres?.leaseSeconds, 4)
        let minute = try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  lease: 1m\n", path: "c", rootDirectory: "/")
        XCTAssertEqual(minute.postgres?.leaseSeconds, 60)
    }

    /// The former spelling is still read, with a warning at its position.
    func testLeaseSecondsIsReadWithADeprecationWarning() throws {
        let old = try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  leaseSeconds: 4\n", path: "/r/old-cluster.yaml", rootDirectory: "/")
        XCTAssertEqual(old.postgres?.leaseSeconds, 4)
        let warnings = ConfigWarnings.recorded.map(\.description).filter { $0.hasPrefix("/r/old-cluster.yaml") }
        XCTAssertTrue(
            warnings.contains("/r/old-cluster.yaml:3:3: 'postgres.leaseSeconds' is deprecated: write 'lease' (\(ConfigDuration.expected))"), "\(warnings)")
        XCTAssertThrowsError(
            try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  lease: 4s\n  leaseSeconds: 4\n", path: "c", rootDirectory: "/")
        ) { XCTAssertTrue("\($0)".contains("c:4:3: 'postgres.lease' is given twice"), "\($0)") }
    }

    func testLeaseOutOfRangeOrNotADurationIsRefusedWithItsLine() throws {
        for (bad, message) in [("1s", "out of range: '1s' (expected a value in 2s…1h)"), ("61m", "out of range"), ("ten", "bad duration 'ten'")] {
            XCTAssertThrowsError(
                try ClusterConfig.parse("postgres:\n  url: postgresql://u@h/db\n  lease: \(bad)\n", path: "/r/cluster.yaml", rootDirectory: "/r")
            ) {
                let text = "\($0)"
                XCTAssertTrue(text.contains("/r/cluster.yaml:3:10") && text.contains("'postgres.lease'") && text.contains(message), text)
            }
        }
    }
}
