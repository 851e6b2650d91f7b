import CloudCore
import Foundation
import TestSupport
import XCTest

/// What a refused credential does to the upload queue, end to end against a moto server that
/// checks signatures: the run stops with exit 78 and every item stays queued with its attempts
/// unspent, as after a crash; once the secret is fixed the same items are sent.
extension UploadBucketStagingIntegrationTests {
    func testAWrongSecretStopsTheRunWith78AndLeavesTheItemsQueuedUntilItIsFixed() async throws {
        let f = try await setUpFleet(authenticated: true)
        defer { f.stop() }
        let h = f.h
        var ids: [Int64] = []
        for name in ["scan-1.bin", "scan-2.bin"] {
            let source = h.dir.file(name)
            try makeUploadTestFile(source, size: 60_000)
            guard case .success(let id) = try h.enqueue(source, peer: f.peer) else { return XCTFail("enqueue failed") }
            ids.append(id)
        }
        // The sending host is another machine: it has only the queue rows and the bucket.
        try FileManager.default.removeItem(atPath: h.root + "/account-0/uploads")
        let credentials = h.root + "/s3-credentials"
        let wrongSecret = "wrong-" + String(f.moto.credentials.secretAccessKey.reversed())
        try writePrivate(
            credentials, "[default]\naws_access_key_id = \(f.moto.credentials.accessKeyId)\naws_secret_access_key = \(wrongSecret)\n")

        let refused = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(refused.status, 78, "a refused credential is a configuration error: \(refused.stderr)")
        // A HEAD answer has no body: the refusal reads as S3 documents its status.
        let said = refused.stdout + refused.stderr
        XCTAssertTrue(said.contains("SignatureDoesNotMatch") || said.contains("AccessDenied"), said)
        XCTAssertFalse(refused.stderr.contains(wrongSecret), "no secret in errors")
        XCTAssertFalse(refused.stdout.contains(wrongSecret), "no secret in the report")
        for id in ids {
            let item = try XCTUnwrap(try h.uploadItems().first { $0.id == id })
            XCTAssertEqual(item.state, .queued, "item \(id) stays queued: \(item.failureReason ?? "")")
            XCTAssertEqual(item.attempts, 0, "item \(id): a refused credential spends no attempt")
            XCTAssertEqual(try f.cloud.messageCount(peer: f.peer, randomId: item.randomId), 0)
        }
        // Running again with the same wrong secret changes nothing either.
        let again = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(again.status, 78, again.stderr)
        XCTAssertEqual(try h.uploadItems().filter { ids.contains($0.id) }.map(\.attempts), [0, 0])

        // The operator fixes the secret: the same items are sent.
        try writePrivate(
            credentials,
            "[default]\naws_access_key_id = \(f.moto.credentials.accessKeyId)\naws_secret_access_key = \(f.moto.credentials.secretAccessKey)\n")
        let fixed = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(fixed.status, 0, fixed.stderr)
        XCTAssertEqual(JobrunHarness.counters(fixed.stdout)["items_sent"], 2, fixed.stdout)
        for id in ids {
            let item = try XCTUnwrap(try h.uploadItems().first { $0.id == id })
            XCTAssertEqual(item.state, .sent, item.failureReason ?? "")
            XCTAssertEqual(try f.cloud.messageCount(peer: f.peer, randomId: item.randomId), 1, "item \(id) sent once")
        }
    }

    func testACredentialRefusalIsAConfigurationErrorAndAnOutageIsNot() {
        func error(_ status: Int, _ code: String) -> S3Error {
            S3Error(bucket: "b", operation: "GetObject", key: "k", reason: .service(status: status, code: code, message: ""))
        }
        for code in ["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "NoSuchBucket"] {
            XCTAssertTrue(error(403, code).isConfigurationError, code)
            XCTAssertFalse(error(403, code).isRetryable, code)
        }
        XCTAssertTrue(error(403, "").isConfigurationError, "a bare 403")
        XCTAssertTrue(error(401, "HTTP401").isConfigurationError, "a bare 401")
        XCTAssertFalse(error(403, "RequestTimeTooSkewed").isConfigurationError, "a skewed clock is retried")
        XCTAssertFalse(error(404, "NoSuchKey").isConfigurationError, "a missing object is the item's")
        XCTAssertFalse(error(503, "SlowDown").isConfigurationError)
        XCTAssertFalse(error(500, "InternalError").isConfigurationError)
    }
}
