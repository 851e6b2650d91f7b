import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import XCTest

/// A streamable video whose header the cloud revises between runs: the next fetch sees the new
/// `X-Header-Revision` on its parts, fetches `0..<headerSize` again, and replaces the header in
/// the partial file; everything else it held stays, and nothing else is fetched twice.
final class RevisedHeaderFetchTests: XCTestCase {
    private let info = MediaResourceStorageInfo()

    /// Every byte `box` holds of the resource equals the cloud's current byte at that offset.
    private func assertHeldBytesAreCurrent(
        _ box: MediaBox, _ resource: CloudDocumentMediaResource, _ f: FetchFixture, fileId: Int64, line: UInt = #line
    ) throws {
        let held = try XCTUnwrap(box.heldRanges(resource.id), line: line)
        let path = try XCTUnwrap(box.resourceData(resource.id), line: line).path
        let local = try Data(contentsOf: URL(fileURLWithPath: path))
        for r in held.ranges.ranges {
            let served = try XCTUnwrap(try f.server.servedBytes(fileId: fileId, r), line: line)
            XCTAssertEqual(local.subdata(in: Int(r.lowerBound)..<Int(r.upperBound)), served, "bytes \(r)", line: line)
        }
    }

    private func recordedRevision(_ box: MediaBox, _ id: MediaResourceId) -> Int64? {
        MediaBoxPartialFile.record(of: box.paths(for: id), in: box.directory)?.headerRevision
    }

    func testRevisedHeaderIsFetchedAgainAndReplacedWithOnlyTheMissingRanges() async throws {
        try await checkRevisedHeader(cdn: false) { _ in }
    }

    /// The same through CDN redirects: the CDN's parts carry the revision too.
    func testRevisedHeaderFromTheCdn() async throws {
        try await checkRevisedHeader(cdn: true) {
            $0.cdnFraction = 1
            $0.cdnReuploadFraction = 0
        }
    }

    private func checkRevisedHeader(cdn: Bool, _ configure: (inout CloudServerConfig) -> Void) async throws {
        let f = try await FetchFixture.start(configure)
        defer { Task { await f.stop() } }
        let doc = try await f.largestVideo()
        let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
        XCTAssertGreaterThan(resource.headerSize, 0)
        XCTAssertEqual(try f.server.fileInfo(id: doc.id)?.cdn, cdn, "served through the CDN or not, as meant")
        let headerPart = min(FilePartRules.preferredPartSize(fileSize: doc.size), doc.size)
        // Three growing prefixes of whole parts, all short of the file's end.
        let quarter = doc.size / 4 / headerPart * headerPart
        XCTAssertGreaterThan(quarter, resource.headerSize, "room for the prefixes below")

        // A first run prefetches a prefix at revision 0.
        let first = try f.mediaBox(fetcher: f.fetcher())
        _ = try await first.fetch(resource, info: info, ranges: [0..<quarter], priority: .default)
        XCTAssertEqual(recordedRevision(first, resource.id), 0, "the header's revision is recorded with it")
        let originalHeader = try XCTUnwrap(try f.server.servedBytes(fileId: doc.id, 0..<resource.headerSize))

        // The cloud revises the header; a later run wants a larger prefix.
        try await FetchFixture.settle()
        let revision = try XCTUnwrap(try f.server.reviseHeader(fileId: doc.id))
        XCTAssertEqual(revision.revision, 1)
        XCTAssertNotEqual(try f.server.servedBytes(fileId: doc.id, 0..<resource.headerSize), originalHeader)
        f.server.resetCounters()
        let second = try f.mediaBox(fetcher: f.fetcher())
        let prefix = try await second.fetch(resource, info: info, ranges: [0..<(2 * quarter)], priority: .default)
        XCTAssertFalse(prefix.complete)
        XCTAssertEqual(recordedRevision(second, resource.id), 1)
        try assertHeldBytesAreCurrent(second, resource, f, fileId: doc.id)
        var counters = f.server.partCounters(fileId: doc.id)
        XCTAssertEqual(counters.bytes, headerPart + quarter, "the header part again, then only the missing range")
        XCTAssertEqual(counters.offsets["0"], 1, "the header fetched again once")
        XCTAssertTrue(counters.offsets.values.allSatisfy { $0 == 1 }, "every part once: \(counters.offsets)")

        // Without a revision, a larger prefix fetches only what is missing: never the header.
        try await FetchFixture.settle()
        f.server.resetCounters()
        _ = try await second.fetch(resource, info: info, ranges: [0..<(3 * quarter)], priority: .default)
        counters = f.server.partCounters(fileId: doc.id)
        XCTAssertEqual(counters.bytes, quarter)
        XCTAssertNil(counters.offsets["0"], "the header is current: not fetched again")

        // Revised once more; the whole file is fetched by a third run and equals the cloud's.
        try await FetchFixture.settle()
        XCTAssertEqual(try f.server.reviseHeader(fileId: doc.id)?.revision, 2)
        f.server.resetCounters()
        let third = try f.mediaBox(fetcher: f.fetcher())
        let whole = try await f.fetchAndCheck(third, resource, fileId: doc.id)
        let local = try Data(contentsOf: URL(fileURLWithPath: whole.path))
        XCTAssertEqual(local, try f.server.servedBytes(fileId: doc.id, 0..<doc.size), "every offset equals the cloud's file")
        counters = f.server.partCounters(fileId: doc.id)
        XCTAssertEqual(counters.bytes, headerPart + doc.size - 3 * quarter, "the header part again, then only the missing tail")
        XCTAssertTrue(counters.offsets.values.allSatisfy { $0 == 1 }, "every part once: \(counters.offsets)")
    }
}
