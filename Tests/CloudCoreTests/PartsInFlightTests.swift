import CloudCore
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import XCTest

/// One file never has more part requests in flight than `maxPartsPerFile` (a Telegram
/// datacenter's limit), however high the limit shared by all files stands, counted where the
/// requests leave (the transport), while the server's delay keeps every part in flight long.
final class PartsInFlightTests: XCTestCase {
    func testOneFileKeepsAtMostItsPartsPerFileInFlight() async throws {
        try await checkOneFile(partsPerFile: 8)
    }

    func testASmallerPerFileLimitHoldsUnderTheSharedLimit() async throws {
        try await checkOneFile(partsPerFile: 3)
    }

    private func checkOneFile(partsPerFile: Int) async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [24 << 20] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first { $0.size == 24 << 20 })
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            fx.server.updateFaults(FaultConfig(latencyMs: 40))
            let counting = RequestCountingTransport(fx.transport)
            let fetch = MultipartFetch(
                transport: counting,
                configuration: fx.configuration {
                    $0.maxPartsPerFile = partsPerFile
                    $0.initialConcurrentParts = 32
                })
            let box = try fx.mediaBox(fetcher: fetch)
            try await fx.fetchAndCheck(box, resource, fileId: doc.id)
            fx.server.updateFaults(FaultConfig(latencyMs: 0))
            XCTAssertGreaterThanOrEqual(fetch.concurrency.limit, 32, "the shared limit allowed more than one file's parts")
            XCTAssertEqual(counting.peak, partsPerFile, "part requests of the one file in flight at once")
        } catch {
            await fx.stop()
            throw error
        }
        await fx.stop()
    }
}
