import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import Synchronization
import TestSupport
import XCTest

/// Records the offset of every data event in the order MediaBox receives it.
final class EventOrderFetcher: MediaResourceFetcher {
    let inner: any MediaResourceFetcher
    private let offsets = Mutex<[Int64]>([])
    init(_ inner: any MediaResourceFetcher) { self.inner = inner }

    var order: [Int64] { offsets.withLock { $0 } }

    private final class Upstream: @unchecked Sendable {
        // @unchecked Sendable: read by one consumer at a time (MediaBox's fetch loop).
        var iterator: AsyncThrowingStream<MediaResourceFetchEvent, any Error>.AsyncIterator
        init(_ s: AsyncThrowingStream<MediaResourceFetchEvent, any Error>) { iterator = s.makeAsyncIterator() }
    }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let upstream = Upstream(inner.fetch(request))
        return AsyncThrowingStream(unfolding: { [self] in
            guard let event = try await upstream.iterator.next() else { return nil }
            switch event {
            case let .dataPart(offset, _), let .dataWritten(offset, _): offsets.withLock { $0.append(offset) }
            case .replaceHeader: offsets.withLock { $0.append(0) }
            case .resourceSizeUpdated, .headerRevision: break
            }
            return event
        })
    }
}

/// MediaBox's ranged fetch with priorities through MultipartFetch, against a real cloud server.
final class RangedFetchTests: XCTestCase {
    /// Every held byte equals the server's byte at the same offset.
    private func assertHeldBytesMatch(_ box: MediaBox, _ resource: CloudDocumentMediaResource, _ f: FetchFixture, fileId: Int64) throws {
        let held = try XCTUnwrap(box.heldRanges(resource.id))
        let path = box.resourceData(resource.id)!.path
        let local = try Data(contentsOf: URL(fileURLWithPath: path))
        for r in held.ranges.ranges {
            let served = try XCTUnwrap(try f.server.servedBytes(fileId: fileId, r))
            XCTAssertEqual(local.subdata(in: Int(r.lowerBound)..<Int(r.upperBound)), served, "bytes \(r)")
        }
    }

    func testHeaderComesFirstAndOnlyWantedRangesAreFetched() async throws {
        let f = try await FetchFixture.start { $0.dataset.maxMediaSize = 6 << 20 }
        defer { Task { await f.stop() } }
        let doc = try await f.largestVideo()
        let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
        XCTAssertGreaterThan(resource.headerSize, 0)
        let order = EventOrderFetcher(f.fetcher { $0.maxPartsPerFile = 1 })
        let box = try f.mediaBox(fetcher: order)
        let tail = (doc.size - 300_000)..<(doc.size - 200_000)
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [tail], priority: .default)
        XCTAssertFalse(data.complete)
        XCTAssertEqual(order.order.first, 0, "the header is fetched before the wanted range")
        let held = try XCTUnwrap(box.heldRanges(resource.id))
        XCTAssertTrue(held.ranges.contains(0..<resource.headerSize), "holds the header")
        XCTAssertTrue(held.ranges.contains(tail), "holds the wanted range")
        XCTAssertLessThan(held.ranges.totalBytes, doc.size / 2, "nothing else was fetched")
        try assertHeldBytesMatch(box, resource, f, fileId: doc.id)

        // A later whole fetch (a new MediaBox: another run) fetches only what is missing.
        try await FetchFixture.settle()
        f.server.resetCounters()
        let box2 = try f.mediaBox(fetcher: f.fetcher())
        try await f.fetchAndCheck(box2, resource, fileId: doc.id)
        let counters = f.server.partCounters(fileId: doc.id)
        XCTAssertEqual(counters.bytes, doc.size - held.ranges.totalBytes, "resumed range by range, nothing fetched twice")
        XCTAssertTrue(counters.offsets.values.allSatisfy { $0 == 1 }, "every part once: \(counters.offsets)")
    }

    func testPrefixesComeInWholeMegabytePartsOnceTheLinkIsFast() async throws {
        let f = try await FetchFixture.start { $0.dataset.benchVideos = (0..<8).map { 3_000_000 + Int64($0) * 500_000 } }
        defer { Task { await f.stop() } }
        let videos = try await f.benchDocuments().filter { ($0.headerSize ?? 0) > 0 }
        XCTAssertEqual(videos.count, 8)
        // Any loopback link counts as fast here, however loaded the machine.
        let box = try f.mediaBox(fetcher: f.fetcher { $0.largePartSeconds = 60 })
        let prefix = Int64(2 << 20)
        for doc in videos {
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            _ = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [0..<prefix], priority: .default)
            let held = try XCTUnwrap(box.heldRanges(resource.id))
            XCTAssertEqual(held.ranges.ranges, [0..<prefix], "exactly the prefix, header included")
            try assertHeldBytesMatch(box, resource, f, fileId: doc.id)
        }
        // The first prefix comes (at least its first block) in the file's 128 KiB parts; once
        // parts are seen to arrive fast, a prefix is its two 1 MiB blocks.
        let first = f.server.partCounters(fileId: videos[0].id)
        XCTAssertGreaterThanOrEqual(first.parts, 9, "128 KiB parts before anything was measured: \(first.offsets)")
        let last = f.server.partCounters(fileId: videos[7].id)
        XCTAssertEqual(last.offsets, ["0": 1, "1048576": 1], "two 1 MiB parts")
        XCTAssertEqual(last.bytes, prefix)

        // A whole fetch keeps the file's part size, and fetches only what the prefix left.
        f.server.resetCounters()
        let doc = videos[7]
        try await f.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: .standalone), fileId: doc.id)
        let rest = f.server.partCounters(fileId: doc.id)
        XCTAssertEqual(rest.bytes, doc.size - prefix)
        XCTAssertEqual(rest.parts, Int((doc.size - prefix + (128 << 10) - 1) / (128 << 10)), "128 KiB parts: \(rest.offsets)")
    }

    func testMaximumPriorityIsServedDuringABackgroundFetch() async throws {
        let f = try await FetchFixture.start {
            $0.dataset.maxMediaSize = 6 << 20
            $0.faults.bandwidthBytesPerSecond = 2 << 20
        }
        defer { Task { await f.stop() } }
        let doc = try await f.largestVideo()
        let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
        let order = EventOrderFetcher(f.fetcher { $0.maxPartsPerFile = 2 })
        let box = try f.mediaBox(fetcher: order)
        let background = Task { try await box.fetch(resource, info: MediaResourceStorageInfo()) }
        // Wait until the background transfer is under way.
        while order.order.count < 3 { try await Task.sleep(for: .milliseconds(20)) }
        let urgent = (doc.size - 100_000)..<doc.size
        let before = order.order.count
        let partial = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [urgent], priority: .maximum)
        let after = order.order
        XCTAssertFalse(partial.complete, "answered before the background fetch finished")
        let held = try XCTUnwrap(box.heldRanges(resource.id))
        XCTAssertTrue(held.ranges.contains(urgent))
        XCTAssertLessThan(held.ranges.totalBytes, doc.size, "the background fetch is still running")
        // At most the parts already in flight (2) land before the urgent one starts.
        let part = Int64(128 << 10)
        let urgentIndex = try XCTUnwrap(after.firstIndex { $0 >= urgent.lowerBound / part * part })
        XCTAssertLessThanOrEqual(urgentIndex - before, 3, "served next, not after the lower priority: \(after)")
        let whole = try await background.value
        XCTAssertTrue(whole.complete)
        XCTAssertEqual(try SHA256.hash(contentsOfFile: whole.path).hexString, try f.expectedSHA(doc.id))
    }
}
