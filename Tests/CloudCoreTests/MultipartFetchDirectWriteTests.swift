import CloudCore
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import TestSupport
import XCTest

/// Parts from the master DC are written straight into the partial file as they arrive; these
/// tests check that such bytes count only after their part verified.
final class MultipartFetchDirectWriteTests: XCTestCase {
    func testCorruptPartsWrittenToTheFileAreNeverRecordedAndAreFetchedAgain() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [3 << 20 + 11] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            fx.server.updateFaults(FaultConfig(corruptRate: 1))
            let box = try fx.mediaBox(fetcher: fx.fetcher { $0.retry.maxAttempts = 2 })
            do {
                _ = try await box.fetch(resource, info: MediaResourceStorageInfo())
                XCTFail("every part is corrupt: the fetch must fail")
            } catch let e as MultipartFetchError {
                guard case .badAnswer(let id, _, _) = e else { return XCTFail("\(e)") }
                XCTAssertEqual(id, resource.id)
            }
            let paths = box.paths(for: resource.id)
            let written = (try? FileManager.default.attributesOfItem(atPath: paths.partial)[.size] as? NSNumber)?.int64Value ?? 0
            XCTAssertGreaterThan(written, 0, "the corrupt bytes went into the partial file as they arrived")
            XCTAssertEqual(FetchFixture.storedRanges(box, resource.id), [], "no unverified byte is recorded")
            XCTAssertNil(box.resourceData(resource.id).flatMap { $0.complete ? $0 : nil })

            try await FetchFixture.settle()
            fx.server.updateFaults(FaultConfig(corruptRate: 0))
            let resumed = try fx.mediaBox(fetcher: fx.fetcher())
            try await fx.fetchAndCheck(resumed, resource, fileId: doc.id)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }
}
