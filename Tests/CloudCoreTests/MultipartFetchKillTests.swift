import CloudCore
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import TestSupport
import XCTest

/// A download SIGKILLed midway (a `jobrun-testkit fetch-cloud-document` child) resumes
/// in-process and transfers only the parts the partial file lacks (cloudd's counters prove it).
final class MultipartFetchKillTests: XCTestCase {
    func testKilledDownloadResumesWithOnlyMissingParts() async throws {
        let testkit = try Products.builtExecutable("jobrun-testkit")
        let probe = try ChildProcess(testkit, [])
        probe.wait(timeout: 10)
        XCTAssertTrue(probe.stderr.contains("fetch-cloud-document"), "jobrun-testkit must offer fetch-cloud-document: \(probe.stderr)")
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [16 << 20 + 4097] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            fx.server.updateFaults(FaultConfig(latencyMs: 40))
            let media = fx.directory.file("media")
            let json = String(decoding: try JSONEncoder().encode(doc), as: UTF8.self)
            let urls = fx.server.dcURLs.map(\.absoluteString).joined(separator: ",")
            let child = try ChildProcess(testkit, ["fetch-cloud-document", media, urls, json, "2"])
            let deadline = Date().addingTimeInterval(30)
            while child.stdout.components(separatedBy: "\npart ").count < 6, Date() < deadline { usleep(5_000) }
            child.signal(SIGKILL)
            child.wait()
            XCTAssertFalse(child.stdout.contains("done"), "killed before the end")
            try await FetchFixture.settle()
            fx.server.updateFaults(FaultConfig(latencyMs: 0))

            let box = try fx.mediaBox(fetcher: fx.fetcher())
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            let stored = FetchFixture.storedRanges(box, resource.id)
            let storedBytes = stored.reduce(Int64(0)) { $0 + Int64($1.count) }
            XCTAssertGreaterThanOrEqual(storedBytes, 4 << 20, "parts survived the SIGKILL")
            XCTAssertLessThan(storedBytes, doc.size)
            fx.server.resetCounters()
            try await fx.fetchAndCheck(box, resource, fileId: doc.id)
            let parts = fx.server.partCounters(fileId: doc.id)
            XCTAssertEqual(parts.bytes, doc.size - storedBytes, "only the missing bytes were transferred")
            for (offsetText, n) in parts.offsets {
                let offset = try unwrap(Int64(offsetText))
                XCTAssertEqual(n, 1)
                XCTAssertFalse(stored.contains { $0.contains(offset) }, "part \(offset) was already stored")
            }
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }
}
