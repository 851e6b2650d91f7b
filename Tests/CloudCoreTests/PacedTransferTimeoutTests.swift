import CloudCore
import CloudServer
import Foundation
import MediaBox
import TestSupport
import XCTest

/// Timeouts follow the pacing: under a bandwidth limit a part that takes longer than the
/// request timeout while its bytes keep coming completes, and a transfer whose bytes stop is
/// still an error (the stall window, `idleTimeout`).
final class PacedTransferTimeoutTests: XCTestCase {
    func testAPacedPartOutlastsTheRequestTimeoutWhileBytesFlow() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [160 << 10] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            XCTAssertEqual(doc.size, 160 << 10)
            var tc = TransportConfiguration()
            tc.maxReceiveBytesPerSecond = 32 << 10
            tc.idleTimeout = 3
            let paced = try CurlTransport(configuration: tc)
            // One part of 160 KiB at 32 KiB/s takes about 5 s: more than twice the timeout.
            let fetch = MultipartFetch(
                transport: paced,
                configuration: fx.configuration {
                    $0.requestTimeout = 2
                    $0.maxPartsPerFile = 1
                })
            let box = try fx.mediaBox(fetcher: fetch)
            let started = Date()
            try await fx.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: .standalone), fileId: doc.id)
            let elapsed = Date().timeIntervalSince(started)
            print("paced fetch: 160 KiB at 32 KiB/s in \(String(format: "%.1f", elapsed)) s under a 2 s request timeout")
            XCTAssertGreaterThan(elapsed, 3, "the download was paced")
        } catch {
            await fx.stop()
            throw error
        }
        await fx.stop()
    }

    func testAPacedTransferWhoseBytesStopIsAStallError() async throws {
        let listener = try LoopbackListener { client in
            _ = LoopbackListener.readRequest(client)
            // A few bytes, then silence with the connection open.
            LoopbackListener.writeAll(client, Data("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".utf8) + Data(repeating: 7, count: 1000))
            LoopbackListener.waitForClose(client)
        }
        defer { listener.stop() }
        var configuration = TransportConfiguration()
        configuration.maxReceiveBytesPerSecond = 32 << 10
        configuration.idleTimeout = 2
        let transport = try CurlTransport(configuration: configuration)
        let started = Date()
        let error = await assertTransportError {
            try await transport.send(HTTPRequest(url: "\(listener.baseURL)/stalled", timeout: 1))
        }
        let elapsed = Date().timeIntervalSince(started)
        guard case .timedOut(let kind, _, _)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(kind, .idle, "a paced transfer ends on a stall, not on the total timeout")
        XCTAssertGreaterThanOrEqual(elapsed, 1.5)
        XCTAssertLessThan(elapsed, 15)
    }
}
