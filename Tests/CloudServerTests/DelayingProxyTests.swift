import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

/// The delaying proxy in front of a real server (an in-process cloud without delays of its own):
/// the bytes pass unchanged, every answer waits the latency, and a body is paced, an answer's
/// and a request's alike.
final class DelayingProxyTests: XCTestCase {
    func testAnswersWaitTheLatencyAndBodiesArePacedAndIntact() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [2_000_000] }
        addTeardownBlock { await server.stop() }
        let f = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).files.first { $0.size == 2_000_000 }!
        let info = try await TestCloud.fileInfo(server, f.id)
        let proxy = try await DelayingProxy.start(upstreamPort: try XCTUnwrap(server.dcURLs[0].port))
        addTeardownBlock { await proxy.stop() }
        let base = URL(string: "http://127.0.0.1:\(proxy.port)")!

        // No delay: the proxy relays the bytes unchanged.
        let plain = try await TestHTTP.request(base.appendingPathComponent("plain/\(f.id)"))
        XCTAssertEqual(plain.status, 200)
        XCTAssertEqual(SHA256.hash(plain.body).hexString, info.sha256)

        // 300 ms before every answer: each of three requests on the connection waits it.
        proxy.current = NetworkDelay(latencyMs: 300)
        let start = ContinuousClock.now
        for _ in 0..<3 {
            let health = try await TestHTTP.request(base.appendingPathComponent("health"))
            XCTAssertEqual(health.status, 200)
        }
        let waited = ContinuousClock.now - start
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(900))
        XCTAssertLessThan(waited, .seconds(20))

        // 4 MB/s: 2 MB take at least half a second after the latency, and arrive intact.
        proxy.current = NetworkDelay(latencyMs: 0, bandwidth: 4_000_000)
        let paced = ContinuousClock.now
        let body = try await TestHTTP.request(base.appendingPathComponent("plain/\(f.id)"))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - paced, .milliseconds(450))
        XCTAssertEqual(SHA256.hash(body.body).hexString, info.sha256)

        // The bandwidth holds both ways: a 2 MB request body takes half a second as well, and
        // the server stores it intact.
        let upload = SecureRandom.bytes(2_000_000)
        let sending = ContinuousClock.now
        let put = try await TestHTTP.request(
            base.appendingPathComponent("plain/upload/through-proxy.bin"), method: "PUT", body: upload,
            headers: ["Content-Type": "application/octet-stream"])
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - sending, .milliseconds(450))
        XCTAssertEqual(put.status, 201)
        XCTAssertEqual(try put.decode(PlainUploadInfo.self).sha256, SHA256.hash(upload).hexString)
    }
}
