import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

/// `POST /api/container`: a small file's part and its `sendMedia` in one request, run in order
/// behind one wait for the latency; each call's failure is its own answer; a malformed
/// container is refused whole.
final class ContainerTests: XCTestCase {
    private func post(_ base: URL, _ body: Data) async throws -> HTTPResult {
        try await TestHTTP.request(
            base.appendingPathComponent("api/container"), method: "POST", body: body, headers: ["Content-Type": CloudContainer.contentType])
    }

    func testPartAndSendMediaInOneRequestOneRoundTrip() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[0]
        let peer = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).peers[0].id
        let data = SecureRandom.bytes(300_000)
        let fileId = SecureRandom.int64()
        let send = SendMediaRequest(
            peerId: peer, randomId: SecureRandom.int64(),
            file: InputFile(id: fileId, parts: 1, name: "c.bin", big: false, sha256: SHA256.hash(data).hexString))
        let body = try CloudContainer.request([
            (.saveFilePart, [(UploadQuery.fileId, fileId), (UploadQuery.part, 0)], data),
            (.sendMedia, [], try JSONEncoder().encode(send)),
        ])
        try await TestHTTP.adminPost(server, "faults", FaultConfig(latencyMs: 300))
        let start = ContinuousClock.now
        let r = try await post(base, body)
        let took = ContinuousClock.now - start
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        XCTAssertGreaterThanOrEqual(took, .milliseconds(300))
        XCTAssertLessThan(took, .milliseconds(600), "one wait for the latency, not one per call")
        let answers = try CloudContainer.answers(of: r.body)
        XCTAssertEqual(answers.map(\.status), [200, 200])
        XCTAssertEqual(try JSONDecoder().decode(OkResponse.self, from: answers[0].body).ok, true)
        let message = try JSONDecoder().decode(SendMediaResponse.self, from: answers[1].body).message
        let document = try XCTUnwrap(message.media.first?.document)
        XCTAssertEqual(document.size, 300_000)
        let stored = try await TestCloud.fileInfo(server, document.id)
        XCTAssertEqual(stored.sha256, SHA256.hash(data).hexString)
        let methods = try await TestHTTP.adminGet(server, "counters", as: CountersResponse.self).methods
        XCTAssertEqual(methods["container"], 1)
        XCTAssertEqual(methods["upload.saveFilePart"], 1)
        XCTAssertEqual(methods["messages.sendMedia"], 1)
    }

    func testEachCallFailsOnItsOwnAndBadContainersAreRefused() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[0]
        let peer = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).peers[0].id
        let fileId = SecureRandom.int64()
        // A part of a file id 0 fails; the send that follows finds no part, at once.
        let send = SendMediaRequest(peerId: peer, randomId: SecureRandom.int64(), file: InputFile(id: fileId, parts: 1, name: "x", big: false))
        let body = try CloudContainer.request([
            (.saveFilePart, [(UploadQuery.fileId, 0), (UploadQuery.part, 0)], Data([1, 2, 3])),
            (.sendMedia, [], try JSONEncoder().encode(send)),
            (.container, [], Data()),
        ])
        let r = try await post(base, body)
        XCTAssertEqual(r.status, 200)
        let answers = try CloudContainer.answers(of: r.body)
        XCTAssertEqual(answers.map(\.status), [400, 400, CloudErrorName.methodInvalid.httpStatus])
        let names = try answers.map { try JSONDecoder().decode(CloudErrorEnvelope.self, from: $0.body).error.name }
        XCTAssertEqual(names, [.fileIdInvalid, .filePartMissing(0), .methodInvalid])

        // Lengths that do not add up, no header line, or no calls: the whole container is refused.
        var short = try CloudContainer.request([(.saveFilePart, [(UploadQuery.fileId, fileId), (UploadQuery.part, 0)], Data(count: 100))])
        short.removeLast()
        for bad in [short, Data("no header".utf8), Data("{\"calls\": []}\n".utf8)] {
            let refused = try await post(base, bad)
            XCTAssertEqual(refused.status, 400)
            XCTAssertEqual(refused.headers[CloudHeader.error.lowercased()], CloudErrorName.badRequest.rawValue)
        }
    }
}
