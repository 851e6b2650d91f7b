import CloudCore
import CloudCrypto
import Foundation
import Postbox
import TestSupport
import XCTest

/// Upload staging in a bucket, end to end: the built `jobrun` (enqueue-upload, then upload-queue
/// as another host would run it), a `cloudd` child and a moto S3 server.
final class UploadBucketStagingIntegrationTests: XCTestCase {
    static let bucket = "jobrun-staging"
    static let prefix = "jobrun/uploads/account-0/"

    /// The servers and the data root of one test, with the cluster configuration naming the bucket.
    struct Setup {
        let h: JobrunHarness
        let cloud: UploadCloudd
        let moto: MotoServer
        let s3: S3Client
        let peer: Int64

        func stop() {
            cloud.stop()
            moto.stop()
        }
    }

    /// `authenticated`: moto checks signatures, refusing a wrong key or secret as S3 does.
    func setUpFleet(authenticated: Bool = false) async throws -> Setup {
        let h = JobrunHarness()
        let moto = try MotoServer.start(logDirectory: URL(fileURLWithPath: h.dir.file(".")), authenticated: authenticated)
        let cloud: UploadCloudd
        do { cloud = try UploadCloudd(uploadDirectory: h.dir.file("cloudd")) } catch {
            moto.stop()
            throw error
        }
        let s3 = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: Self.bucket),
            credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey))
        try await s3.createBucket()
        try h.configure(cloud)
        try h.writeUploadJob("upload-queue")
        try writePrivate(
            h.root + "/s3-credentials",
            "[default]\naws_access_key_id = \(moto.credentials.accessKeyId)\naws_secret_access_key = \(moto.credentials.secretAccessKey)\n")
        try writePrivate(
            h.root + "/cluster.yaml",
            """
            objectStorage:
              endpoint: \(moto.endpoint)
              bucket: \(Self.bucket)
              credentialsFile: s3-credentials
              partSize: 5MiB

            """)
        return Setup(h: h, cloud: cloud, moto: moto, s3: s3, peer: try cloud.peers()[1])
    }

    func writePrivate(_ path: String, _ text: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
    }

    func testEnqueuedIntoTheBucketThenSentFromAnotherHostOnceAndTheObjectRemoved() async throws {
        let f = try await setUpFleet()
        defer { f.stop() }
        let h = f.h
        let source = h.dir.file("holiday-video.bin")
        try makeUploadTestFile(source, size: 12_000_000)  // three 5 MiB parts: multipart
        let digest = try SHA256.hash(contentsOfFile: source).hexString

        guard case .success(let itemId) = try h.enqueue(source, peer: f.peer) else { return XCTFail("enqueue failed") }
        let queued = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        let key = try XCTUnwrap(queued.staging?.bucketObject?.key)
        XCTAssertTrue(key.hasPrefix(Self.prefix), key)
        XCTAssertFalse(key.contains("holiday"), "the object key never carries the file name")
        XCTAssertEqual(queued.size, 12_000_000)
        XCTAssertEqual(queued.sha256, digest)
        XCTAssertEqual(queued.staging?.word, "bucket")
        let stored = try await f.s3.headObject(key)
        XCTAssertEqual(stored?.size, 12_000_000, "the bytes are in the bucket")
        let uploads = h.root + "/account-0/uploads"
        let local = try FileManager.default.contentsOfDirectory(atPath: uploads)
        XCTAssertEqual(local, [], "no local staged copy")

        // The enqueuing host is gone: only the Postbox row and the bucket object remain.
        try FileManager.default.removeItem(atPath: source)
        try FileManager.default.removeItem(atPath: uploads)

        let run = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(JobrunHarness.counters(run.stdout)["items_sent"], 1, run.stdout)
        let sent = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        XCTAssertEqual(sent.state, .sent, sent.failureReason ?? "")
        XCTAssertEqual(try f.cloud.messageCount(peer: f.peer, randomId: sent.randomId), 1, "sent exactly once")
        let document = try XCTUnwrap(sent.documentId)
        XCTAssertEqual(try f.cloud.fileInfo(document).sha256, digest, "the server holds the same bytes")
        let left = try await f.s3.listAllObjects(prefix: "jobrun/")
        XCTAssertEqual(left.map(\.key), [], "the object is gone from the bucket once sent")
        XCTAssertEqual(sent.staging, .bucket(nil), "the object is gone once sent")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: uploads), [], "the fetched copy is removed too")

        // A second run finds nothing to do and sends nothing again.
        let again = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try f.cloud.messageCount(peer: f.peer, randomId: sent.randomId), 1)
    }

    /// A secret chat's file reaches the bucket only as its encrypted container: read back with
    /// another S3 client (awscli), the object holds no 4 KiB block of the file; the send still
    /// delivers a container that decrypts to the file.
    func testASecretFileIsInTheBucketOnlyEncrypted() async throws {
        let f = try await setUpFleet()
        defer { f.stop() }
        let h = f.h
        let source = h.dir.file("secret-scan.bin")
        try makeUploadTestFile(source, size: 6_000_000)  // two 5 MiB parts: multipart
        let original = try Data(contentsOf: URL(fileURLWithPath: source))
        guard case .success(let itemId) = try h.enqueue(source, peer: f.peer, extra: ["--secret"]) else { return XCTFail("enqueue failed") }
        let queued = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        let key = try XCTUnwrap(queued.staging?.bucketObject?.key)
        XCTAssertEqual(queued.size, Int64(original.count))
        XCTAssertEqual(queued.sha256, SHA256.hash(original).hexString)

        let copy = h.dir.file("object-read-by-awscli")
        let aws = try SystemCommand.status(
            [
                "/usr/bin/env", "AWS_ACCESS_KEY_ID=\(f.moto.credentials.accessKeyId)", "AWS_SECRET_ACCESS_KEY=\(f.moto.credentials.secretAccessKey)",
                "AWS_DEFAULT_REGION=us-east-1", "aws", "--endpoint-url", f.moto.endpoint, "s3", "cp", "s3://\(Self.bucket)/\(key)", copy,
            ])
        XCTAssertEqual(aws.status, 0, aws.stderr)
        let object = try Data(contentsOf: URL(fileURLWithPath: copy))
        XCTAssertEqual(object.count, (original.count + 15) / 16 * 16, "the object is the container")
        var clear = 0
        for offset in stride(from: 0, to: original.count - 4096, by: 4096) where object.range(of: original.subdata(in: offset..<offset + 4096)) != nil {
            clear += 1
        }
        XCTAssertEqual(clear, 0, "4 KiB blocks of the file in clear in the bucket")
        let local = try FileManager.default.contentsOfDirectory(atPath: h.root + "/account-0/uploads").filter { !$0.hasPrefix(".s3-enqueue") }
        XCTAssertEqual(local, [], "no staged copy is left behind")

        let run = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let sent = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        XCTAssertEqual(sent.state, .sent, sent.failureReason ?? "")
        let document = try XCTUnwrap(sent.documentId)
        let container = try Data(contentsOf: URL(fileURLWithPath: f.cloud.uploadDirectory + "/files/\(document)"))
        let secretKey = try XCTUnwrap(sent.secretKey?.key)
        let iv = try XCTUnwrap(sent.secretKey?.iv)
        XCTAssertEqual(try AESIGE.decryptTrimmed(container, key: secretKey, iv: iv, decryptedSize: original.count), original)
        XCTAssertFalse(h.allLogText().contains(secretKey.hexString), "the file's key never reaches a log")
    }

    func testATamperedObjectFailsTheItemWithAClearReasonAndSendsNothing() async throws {
        let f = try await setUpFleet()
        defer { f.stop() }
        let h = f.h
        let source = h.dir.file("notes.bin")
        try makeUploadTestFile(source, size: 300_000)  // one PUT
        let enqueued = try h.run(["enqueue-upload", source, "--peer", String(f.peer), "--json"])
        XCTAssertEqual(enqueued.status, 0, enqueued.stderr)
        let answer = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(enqueued.stdout.utf8)) as? [String: Any])
        let itemId = Int64(try XCTUnwrap(answer["item"] as? Int))
        let queued = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        let key = try XCTUnwrap(queued.staging?.bucketObject?.key)
        XCTAssertEqual(answer["staged"] as? String, "s3://\(Self.bucket)/\(key)")
        XCTAssertEqual(answer["staging"] as? String, "bucket")

        // Same size, different bytes under the key.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        bytes[1000] ^= 0xFF
        try await f.s3.putObject(key, body: .data(bytes))

        let run = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let counters = JobrunHarness.counters(run.stdout)
        XCTAssertEqual(counters["items_failed"], 1, run.stdout)
        XCTAssertEqual(counters["items_sent"], 0, run.stdout)
        let failed = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        XCTAssertEqual(failed.state, .failed)
        let reason = failed.failureReason ?? ""
        XCTAssertTrue(reason.contains(key) && reason.contains(Self.bucket) && reason.contains("SHA-256"), reason)
        XCTAssertEqual(failed.fileId, 0, "no part was sent")
        XCTAssertEqual(try f.cloud.messageCount(peer: f.peer, randomId: failed.randomId), 0, "nothing sent")
        let uploads = h.root + "/account-0/uploads"
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: uploads), [], "no fetched copy kept")
        let kept = try await f.s3.headObject(key)
        XCTAssertNotNil(kept, "the object is kept for inspection: nothing is lost")
    }

    func testAnUnreachableBucketLeavesTheItemQueuedAndExits69() async throws {
        let f = try await setUpFleet()
        defer { f.stop() }
        let h = f.h
        let source = h.dir.file("photo.bin")
        try makeUploadTestFile(source, size: 50_000)
        guard case .success(let itemId) = try h.enqueue(source, peer: f.peer) else { return XCTFail("enqueue failed") }
        try FileManager.default.removeItem(atPath: h.root + "/account-0/uploads")
        f.moto.stop()

        let run = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(run.status, 69, run.stderr)
        let item = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
        XCTAssertEqual(item.state, .queued, item.failureReason ?? "")
        XCTAssertEqual(item.attempts, 0, "an outage spends no attempt")
        XCTAssertTrue((item.failureReason ?? "").contains(Self.bucket), item.failureReason ?? "")
        XCTAssertEqual(try f.cloud.messageCount(peer: f.peer, randomId: item.randomId), 0)
        XCTAssertFalse(run.stderr.contains(f.moto.credentials.secretAccessKey), "no secret in errors")
    }
}
