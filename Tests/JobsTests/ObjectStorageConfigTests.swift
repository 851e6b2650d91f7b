import CloudCore
import Foundation
import Jobs
import TestSupport
import XCTest

/// `cluster.yaml`'s `objectStorage:` section: values, environment overrides, positions in errors,
/// file modes, credentials that never show up in a message, and a client that reaches a real
/// moto server with what the file says.
final class ObjectStorageConfigTests: XCTestCase {
    private func write(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
    }

    func testSectionIsRead() throws {
        let text = """
            postgres:
              url: postgresql://jobrun@db.internal/jobrun
            objectStorage:
              endpoint: https://s3.eu-west-1.amazonaws.com/
              bucket: jobrun-fleet
              region: eu-west-1
              addressing: virtual-hosted
              credentialsFile: s3-credentials
              prefix: /fleet-a
              partSize: 16MiB
              sharedMedia:
                enabled: true
                maxSize: 200GiB
                ttl: 30d
            """
        let c = try XCTUnwrap(try ObjectStorageConfig.parse(text, path: "/r/cluster.yaml", rootDirectory: "/r", environment: [:]))
        XCTAssertEqual(
            c.bucket, S3Bucket(endpoint: "https://s3.eu-west-1.amazonaws.com", name: "jobrun-fleet", region: "eu-west-1", addressing: .virtualHosted))
        XCTAssertEqual(c.credentialsFile, "/r/s3-credentials")
        XCTAssertEqual(c.prefix, "fleet-a/")
        XCTAssertEqual(c.partSize, 16 << 20)
        XCTAssertTrue(c.sharedMedia.enabled)
        XCTAssertEqual(c.sharedMedia.maxSize, 200 << 30)
        XCTAssertEqual(c.sharedMedia.ttl, 30 * 86_400)
        XCTAssertEqual(c.bucket.url(key: "fleet-a/x"), "https://jobrun-fleet.s3.eu-west-1.amazonaws.com/fleet-a/x")

        XCTAssertNil(try ObjectStorageConfig.parse("postgres:\n  url: postgresql://h/db\n", path: "/r/cluster.yaml", rootDirectory: "/r", environment: [:]))
        XCTAssertNil(try ObjectStorageConfig.parse("", path: "/r/cluster.yaml", rootDirectory: "/r", environment: [:]))
    }

    func testEnvironmentOverridesAndCanConfigureAlone() throws {
        let env = [
            "JOBRUN_S3_ENDPOINT": "http://127.0.0.1:9000", "JOBRUN_S3_BUCKET": "from-env", "AWS_REGION": "eu-central-1",
            "JOBRUN_S3_ADDRESSING": "path", "JOBRUN_S3_PREFIX": "p",
        ]
        let c = try XCTUnwrap(try ObjectStorageConfig.parse("", path: "/r/cluster.yaml", rootDirectory: "/r", environment: env))
        XCTAssertEqual(c.bucket, S3Bucket(endpoint: "http://127.0.0.1:9000", name: "from-env", region: "eu-central-1"))
        XCTAssertEqual(c.prefix, "p/")
        let file = "objectStorage:\n  endpoint: http://a:1\n  bucket: in-file\n  region: us-west-2\n"
        let overridden = try XCTUnwrap(
            try ObjectStorageConfig.parse(
                file, path: "/r/cluster.yaml", rootDirectory: "/r", environment: ["JOBRUN_S3_BUCKET": "env-wins", "AWS_REGION": "x-1"]))
        XCTAssertEqual(overridden.bucket.name, "env-wins")
        XCTAssertEqual(overridden.bucket.region, "us-west-2", "the file's region beats AWS_REGION; JOBRUN_S3_REGION beats both")
        XCTAssertThrowsError(try ObjectStorageConfig.parse("", path: "/r/cluster.yaml", rootDirectory: "/r", environment: ["JOBRUN_S3_BUCKET": "b-only"])) {
            XCTAssertTrue("\($0)".contains("JOBRUN_S3_ENDPOINT"), "\($0)")
        }
    }

    func testBadValuesAreReportedWithPositions() {
        let text = """
            objectStorage:
              endpoint: ftp://nowhere
              bucket: Bad_Bucket
              addressing: dns
              partSize: 1MiB
              colour: blue
              sharedMedia:
                enabled: maybe
                ttl: soon
            """
        XCTAssertThrowsError(try ObjectStorageConfig.parse(text, path: "/r/cluster.yaml", rootDirectory: "/r", environment: [:])) { error in
            let message = "\(error)"
            XCTAssertTrue(
                message.contains("/r/cluster.yaml:4:15: 'dns' is not a valid value for 'objectStorage.addressing' (expected one of path, virtual-hosted)"),
                message)
            XCTAssertTrue(message.contains("/r/cluster.yaml:5:13: 'objectStorage.partSize' is out of range: '1MiB' (expected a value in 5MiB…5GiB)"), message)
            XCTAssertTrue(message.contains("/r/cluster.yaml:6:3: unknown key 'colour' in objectStorage"), message)
            XCTAssertTrue(message.contains("/r/cluster.yaml:8:14: 'objectStorage.sharedMedia.enabled' has the wrong type"), message)
            XCTAssertTrue(message.contains("/r/cluster.yaml:9:10: bad duration 'soon' for 'objectStorage.sharedMedia.ttl'"), message)
            XCTAssertEqual((error as? JobError)?.exitCode, .config)
        }
        let values = "objectStorage:\n  endpoint: ftp://nowhere\n  bucket: Bad_Bucket\n"
        XCTAssertThrowsError(try ObjectStorageConfig.parse(values, path: "/r/cluster.yaml", rootDirectory: "/r", environment: [:])) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("/r/cluster.yaml:2:3"), message)
            XCTAssertTrue(message.contains("endpoint must be an http:// or https:// URL"), message)
            XCTAssertTrue(message.contains("bucket must be 3–63 characters"), message)
        }
    }

    func testFileModesAndCredentialsNeverInMessages() throws {
        let dir = TemporaryDirectory()
        let root = DataRoot(path: dir.path)
        XCTAssertNil(try ObjectStorageConfig.load(root: root, environment: [:]), "no file, no variables: local staging")
        let cluster = dir.file("cluster.yaml")
        try write("objectStorage:\n  endpoint: http://127.0.0.1:1\n  bucket: jobrun-modes\n  credentialsFile: keys\n", to: cluster, mode: 0o644)
        XCTAssertThrowsError(try ObjectStorageConfig.load(root: root, environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("cluster configuration \(cluster)") && "\(error)".contains("chmod 600"), "\(error)")
        }
        chmod(cluster, 0o600)
        let config = try XCTUnwrap(try ObjectStorageConfig.load(root: root, environment: [:]))
        XCTAssertEqual(config.credentialsFile, dir.file("keys"))

        let planted = "PLANTED-\(UUID().uuidString)"
        try write("[default]\naws_access_key_id = AKIDX\naws_secret_access_key = \(planted)\n", to: dir.file("keys"), mode: 0o644)
        XCTAssertThrowsError(try config.credentials(environment: [:])) { error in
            XCTAssertTrue("\(error)".contains(dir.file("keys")), "\(error)")
            XCTAssertFalse("\(error)".contains(planted))
        }
        chmod(dir.file("keys"), 0o600)
        XCTAssertEqual(try config.credentials(environment: [:]).secretAccessKey, planted)

        var fromEnvironment = config
        fromEnvironment.credentialsFile = nil
        XCTAssertThrowsError(try fromEnvironment.credentials(environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("AWS_ACCESS_KEY_ID"), "\(error)")
        }
        XCTAssertEqual(
            try fromEnvironment.credentials(environment: ["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": planted]).accessKeyId, "A")
    }

    func testConfiguredClientReachesTheBucket() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url, authenticated: true)
        defer { moto.stop() }
        try write(
            "objectStorage:\n  endpoint: \(moto.endpoint)\n  bucket: jobrun-configured\n  credentialsFile: /dev/null-not-used\n",
            to: dir.file("cluster.yaml"))
        try write(
            "[default]\naws_access_key_id = \(moto.credentials.accessKeyId)\naws_secret_access_key = \(moto.credentials.secretAccessKey)\n",
            to: dir.file("keys"))
        let env = ["JOBRUN_S3_CREDENTIALS_FILE": "keys"]
        let config = try XCTUnwrap(try ObjectStorageConfig.load(root: DataRoot(path: dir.path), environment: env))
        let s3 = try config.client(transport: try CurlTransport(), environment: env)
        try await s3.createBucket()
        try await s3.putObject(config.prefix + "probe", body: .data(Data("ok".utf8)))
        // Listed by a prefix without its '/': SigV4 (and libcurl, and AWS) canonicalise a '/' in a
        // query value as %2F, while moto's signature check keeps it as '/', so a signed listing
        // by "jobrun/" is refused by moto alone.
        let listed = try await s3.listAllObjects(prefix: String(config.prefix.dropLast()))
        XCTAssertEqual(listed.map(\.key), ["jobrun/probe"])
    }
}
