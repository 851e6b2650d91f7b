import CloudCore
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import TestSupport
import XCTest

/// Parts from the master DC are written straight into the partial file as they arrive, or, for a
/// large file whose completion syncs it, gathered whole and written with direct I/O once they
/// verified; these tests check that such bytes count only after their part verified.
final class MultipartFetchDirectWriteTests: XCTestCase {
    func testCorruptPartsWrittenToTheFileAreNeverRecordedAndAreFetchedAgain() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [3 << 20 + 11] }
        do {
            let (resource, written) = try await fetchEveryPartCorrupt(fx)
            XCTAssertGreaterThan(written, 0, "the corrupt bytes went into the partial file as they arrived")
            let resumed = try fx.mediaBox(fetcher: fx.fetcher())
            try await fx.fetchAndCheck(resumed, resource, fileId: resource.fileId)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testLargeFileGathersWholePartsAndWritesOnlyVerifiedOnesPastThePageCache() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [(10 << 20) + 4099] }
        do {
            try XCTSkipUnless(MediaBoxFixtures.takesDirectWrites(fx.directory.path), "this file system takes no direct writes")
            let (resource, written) = try await fetchEveryPartCorrupt(fx)
            XCTAssertEqual(written, 0, "a part that fails its check is never written")
            let resumed = try fx.mediaBox(fetcher: fx.fetcher())
            let data = try await resumed.fetch(resource, info: MediaResourceStorageInfo())
            let resident = try MediaBoxFixtures.residentPages(data.path)
            XCTAssertLessThanOrEqual(resident, 4, "written with direct I/O, the file is not in the page cache (\(resident) pages are)")
            try await fx.fetchAndCheck(resumed, resource, fileId: resource.fileId)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    /// Fetches the fixture's first file while the server corrupts every part: the fetch fails, no
    /// range is recorded, nothing is complete. Returns the resource and the partial file's size;
    /// the server is healthy again afterwards.
    private func fetchEveryPartCorrupt(
        _ fx: FetchFixture, file: StaticString = #filePath, line: UInt = #line
    ) async throws -> (CloudDocumentMediaResource, written: Int64) {
        let doc = try unwrap(try await fx.benchDocuments().first)
        let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
        fx.server.updateFaults(FaultConfig(corruptRate: 1))
        let box = try fx.mediaBox(fetcher: fx.fetcher { $0.retry.maxAttempts = 2 })
        do {
            _ = try await box.fetch(resource, info: MediaResourceStorageInfo())
            XCTFail("every part is corrupt: the fetch must fail", file: file, line: line)
        } catch let e as MultipartFetchError {
            guard case .badAnswer(let id, _, _) = e else { XCTFail("\(e)", file: file, line: line); throw e }
            XCTAssertEqual(id, resource.id, file: file, line: line)
        }
        let paths = box.paths(for: resource.id)
        let written = (try? FileManager.default.attributesOfItem(atPath: paths.partial)[.size] as? NSNumber)?.int64Value ?? 0
        XCTAssertEqual(FetchFixture.storedRanges(box, resource.id), [], "no unverified byte is recorded", file: file, line: line)
        XCTAssertNil(box.resourceData(resource.id).flatMap { $0.complete ? $0 : nil }, file: file, line: line)
        try await FetchFixture.settle()
        fx.server.updateFaults(FaultConfig(corruptRate: 0))
        return (resource, written)
    }
}
