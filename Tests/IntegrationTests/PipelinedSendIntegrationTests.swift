import CloudCore
import CloudCrypto
import CloudProtocol
import Foundation
import Postbox
import TestSupport
import XCTest

/// Pipelined `sendMedia` against a real `cloudd` process that waits a full second before every
/// answer: a small file sent the pipelined way costs one round trip (`sendMedia` leaves with
/// its last part and the server waits for the part), the ordinary way two, and both arrive
/// byte-equal as exactly one message.
final class PipelinedSendIntegrationTests: XCTestCase {
    func testAPipelinedSmallUploadTakesOneRoundTripAndArrivesWhole() async throws {
        let dir = TemporaryDirectory(prefix: "pipelined-send")
        let cloud = try UploadCloudd(
            cloud: ClouddProcess(["--seed", "3", "--dcs", "2", "--cdn-fraction", "0", "--upload-dir", dir.file("cloudd"), "--latency-ms", "1000"]),
            uploadDirectory: dir.file("cloudd"))
        defer { cloud.stop() }
        let peer = try cloud.peers()[0]
        var account = CloudAccountConfig(datacenters: [1: cloud.dcs[0], 2: cloud.dcs[1]], mainDc: 1, requestTimeout: 60)
        account.retry = CloudRetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.2)
        let client = try CloudClient(config: account, transport: CurlTransport())
        let postbox = try Postbox(directory: dir.file("db"))
        let queue = UploadQueue(postbox: postbox, directory: dir.file("uploads"))

        for pipelined in [true, false] {
            let path = dir.file("small-\(pipelined).bin")
            let bytes = SecureRandom.bytes(200_000)  // two parts of 128 KiB
            try bytes.write(to: URL(fileURLWithPath: path))
            let item = try await queue.enqueue(UploadRequest(path: path, peerId: peer))
            var configuration = MultipartUploadConfiguration()
            configuration.pipelinesSendMedia = pipelined
            configuration.checkPeer = false  // no extra round trip before the parts
            let upload = MultipartUpload(client: client, postbox: postbox, configuration: configuration)
            let start = ContinuousClock.now
            let result = try await upload.upload(itemId: item.id)
            let took = ContinuousClock.now - start
            if pipelined {
                XCTAssertLessThan(took, .milliseconds(1900), "pipelined: the parts and sendMedia share one round trip")
            } else {
                XCTAssertGreaterThanOrEqual(took, .milliseconds(2000), "ordinary: the parts, then sendMedia")
            }
            XCTAssertEqual(try cloud.fileInfo(result.documentId).sha256, SHA256.hash(bytes).hexString)
            let randomId = try await postbox.read { try $0.uploadQueue.get(item.id)!.randomId }
            XCTAssertEqual(try cloud.messageCount(peer: peer, randomId: randomId), 1)
        }
    }
}
