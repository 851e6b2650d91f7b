import Foundation
import MediaBox
import Synchronization
import TestSupport
import XCTest

/// A resource with a header, for ranged fetches.
struct StreamableResource: MediaResource {
    let id: MediaResourceId
    let size: Int64?
    let headerSize: Int64
}

/// Serves the test pattern part by part from the live wanted ranges, as a network fetcher
/// does; can send a revised header once everything wanted is delivered.
final class RangeServingFetcher: MediaResourceFetcher {
    let partSize: Int64
    let revisedHeader: Data?
    private let served = Mutex<[Range<Int64>]>([])
    init(partSize: Int64 = 4096, revisedHeader: Data? = nil) {
        self.partSize = partSize
        self.revisedHeader = revisedHeader
    }

    var parts: [Range<Int64>] { served.withLock { $0 } }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let id = request.resource.id.stringRepresentation
        let size = request.knownSize!
        return AsyncThrowingStream { continuation in
            Task {
                while let part = request.ranges?.nextPart(partSize: partSize, fileSize: size) {
                    served.withLock { $0.append(part) }
                    continuation.yield(.dataPart(offset: part.lowerBound, data: MediaTestPattern.bytes(id: id, offset: part.lowerBound, count: part.count)))
                    try? await Task.sleep(for: .milliseconds(1))
                }
                if let revisedHeader { continuation.yield(.replaceHeader(data: revisedHeader)) }
                continuation.finish()
            }
        }
    }
}

final class FetchRangesTests: XCTestCase {
    func testHeaderFirstThenWantedRangesOnly() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-ranges")
        let fetcher = RangeServingFetcher()
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let resource = StreamableResource(id: MediaResourceId("video"), size: 100_000, headerSize: 10_000)
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [50_000..<60_000], priority: .default)
        XCTAssertFalse(data.complete)
        XCTAssertEqual(fetcher.parts.first, 0..<4096, "the header comes first")
        XCTAssertEqual(fetcher.parts.prefix(3).map(\.lowerBound), [0, 4096, 8192], "the whole header before the range")
        let held = try XCTUnwrap(box.heldRanges(resource.id))
        XCTAssertEqual(held.ranges.ranges, [0..<12_288, 49_152..<61_440], "exactly the header and the range, in whole parts")
        XCTAssertEqual(held.size, 100_000)
        // Indexed as a cache entry with the bytes it holds.
        XCTAssertEqual(try box.storageBox.entry(MediaStorageKey(location: .resources, id: resource.id))?.size, 12_288 + 12_288)
    }

    func testReplaceHeaderRewritesTheRangeDurably() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-replaceheader")
        let revised = Data(repeating: 0xA5, count: 6000)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: RangeServingFetcher(revisedHeader: revised))
        let resource = StreamableResource(id: MediaResourceId("clip"), size: 40_000, headerSize: 6000)
        _ = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [20_000..<21_000], priority: .elevated)
        let paths = box.paths(for: resource.id)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: paths.partial))
        XCTAssertEqual(bytes.prefix(6000), revised, "the header was replaced")
        XCTAssertEqual(
            bytes.subdata(in: 6000..<8192), MediaTestPattern.bytes(id: "clip", offset: 6000, count: 2192), "bytes after the header are kept")
        // A new MediaBox (another process) reads the same ranges from the meta.
        let again = try MediaBox(basePath: tmp.path + "/media")
        XCTAssertEqual(again.heldRanges(resource.id)?.ranges.ranges, [0..<8192, 16_384..<24_576])
    }

    func testMaximumRequestJoinsARunningFetchAndReturnsFirst() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-priority")
        let fetcher = RangeServingFetcher(partSize: 1024)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let resource = StreamableResource(id: MediaResourceId("film"), size: 1_000_000, headerSize: 0)
        let whole = Task { try await box.fetch(resource, info: MediaResourceStorageInfo()) }
        while fetcher.parts.count < 5 { try await Task.sleep(for: .milliseconds(2)) }
        let urgent = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [900_000..<910_000], priority: .maximum)
        XCTAssertFalse(urgent.complete, "answered while the whole fetch still runs")
        let index = try XCTUnwrap(fetcher.parts.firstIndex { $0.lowerBound >= 899_000 })
        XCTAssertLessThan(index, fetcher.parts.count, "urgent parts were served")
        XCTAssertLessThan(fetcher.parts[..<index].last!.lowerBound, 200_000, "served next, not after the lower priority finished")
        let done = try await whole.value
        XCTAssertTrue(done.complete)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: done.path)), MediaTestPattern.bytes(id: "film", count: 1_000_000))
        XCTAssertEqual(fetcher.parts.count, 1_000_000 / 1024 + 1, "every part once")
    }
}
