import ConfinedFiles
import Foundation
import Postbox
import TestSupport
import XCTest

@testable import MediaBox

/// Counts fetch calls and serves the test pattern, optionally slowly or failing midway.
final class PatternFetcher: MediaResourceFetcher, @unchecked Sendable {
    private let lock = NSLock()
    private var _calls = 0
    private var _requests: [MediaResourceFetchRequest] = []
    let chunk: Int
    let delay: Duration
    let failAfter: Int64?
    let reportSize: Int64?

    init(chunk: Int = 4096, delay: Duration = .zero, failAfter: Int64? = nil, reportSize: Int64? = nil) {
        self.chunk = chunk
        self.delay = delay
        self.failAfter = failAfter
        self.reportSize = reportSize
    }

    var calls: Int { lock.lock(); defer { lock.unlock() }; return _calls }
    var requests: [MediaResourceFetchRequest] { lock.lock(); defer { lock.unlock() }; return _requests }

    struct Cut: Error {}

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        lock.lock(); _calls += 1; _requests.append(request); lock.unlock()
        let id = request.resource.id.stringRepresentation
        let size = request.knownSize ?? reportSize ?? 0
        let (chunk, delay, failAfter, reportSize) = (self.chunk, self.delay, self.failAfter, self.reportSize)
        return AsyncThrowingStream { continuation in
            Task {
                if let reportSize { continuation.yield(.resourceSizeUpdated(reportSize)) }
                for range in request.missingRanges {
                    var offset = range.lowerBound
                    let end = min(range.upperBound, size)
                    while offset < end {
                        if let failAfter, offset >= failAfter { continuation.finish(throwing: Cut()); return }
                        let n = Int(min(Int64(chunk), end - offset))
                        continuation.yield(.dataPart(offset: offset, data: MediaTestPattern.bytes(id: id, offset: offset, count: n)))
                        offset += Int64(n)
                        if delay > .zero { try? await Task.sleep(for: delay) }
                    }
                }
                continuation.finish()
            }
        }
    }
}

final class PartialFileTests: XCTestCase {
    func testRangeMapMergesAndFindsGaps() {
        var m = RangeMap()
        m.insert(10..<20)
        m.insert(30..<40)
        m.insert(20..<25)
        XCTAssertEqual(m.ranges, [10..<25, 30..<40])
        XCTAssertEqual(m.missing(upTo: 50), [0..<10, 25..<30, 40..<50])
        m.insert(0..<35)
        XCTAssertEqual(m.ranges, [0..<40])
        XCTAssertTrue(m.contains(0..<40))
        XCTAssertFalse(m.contains(0..<41))
        XCTAssertEqual(m.contiguousPrefix, 40)
    }

    func testMetaChecksumDetectsTornWrites() {
        let meta = PartialFileMeta(totalSize: 1000, ranges: [0..<100, 200..<300])
        let bytes = meta.encode()
        XCTAssertEqual(PartialFileMeta.decode(Data(bytes)), meta)
        for cut in [1, 4, 20, bytes.count - 1] { XCTAssertNil(PartialFileMeta.decode(Data(bytes.prefix(cut))), "torn at \(cut)") }
        for i in 0..<bytes.count {
            var flipped = bytes
            flipped[i] ^= 0x40
            XCTAssertNil(PartialFileMeta.decode(Data(flipped)), "flipped byte \(i)")
        }
    }

    func testMetaKeepsTheHeaderRevisionAndReadsVersionOne() {
        let plain = PartialFileMeta(totalSize: 1000, ranges: [0..<100])
        XCTAssertEqual(plain.encode()[4], 1, "no revision: version 1, as before")
        let revised = PartialFileMeta(totalSize: 1000, ranges: [0..<100, 200..<300], headerRevision: 3)
        let bytes = revised.encode()
        XCTAssertEqual(bytes[4], 2)
        XCTAssertEqual(PartialFileMeta.decode(Data(bytes)), revised)
        XCTAssertEqual(PartialFileMeta.decode(Data(plain.encode()))?.headerRevision, nil)
        for cut in [1, 24, 31, bytes.count - 1] { XCTAssertNil(PartialFileMeta.decode(Data(bytes.prefix(cut))), "torn at \(cut)") }
        for i in 0..<bytes.count {
            var flipped = bytes
            flipped[i] ^= 0x40
            XCTAssertNil(PartialFileMeta.decode(Data(flipped)), "flipped byte \(i)")
        }
    }

    func testFetchWritesPartialThenCompletesAtomically() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-fetch")
        let fetcher = PatternFetcher(chunk: 1000)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let resource = SimpleMediaResource("doc-1", size: 10_500)
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo(peerId: PeerId(7), contentType: .file))
        XCTAssertTrue(data.complete)
        XCTAssertEqual(data.size, 10_500)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "doc-1", count: 10_500))
        let paths = box.paths(for: resource.id)
        XCTAssertFalse(FileManager.default.fileExists(atPath: paths.partial))
        XCTAssertNil(RangeRecordOnDisk.value(atPath: paths.complete), "the complete file carries no range record")
        let stats = try box.stats()
        XCTAssertEqual(stats.byPeer[PeerId(7)], StorageUsage(bytes: 10_500, count: 1))
        XCTAssertEqual(stats.byContentType[.file], StorageUsage(bytes: 10_500, count: 1))
        // A second fetch is served from disk.
        _ = try await box.fetch(resource, info: MediaResourceStorageInfo(peerId: PeerId(7), contentType: .file))
        XCTAssertEqual(fetcher.calls, 1)
    }

    func testResumeFromExistingPartialFetchesOnlyTheMissingRanges() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-resume")
        let resource = SimpleMediaResource("video-9", size: 50_000)
        let failing = PatternFetcher(chunk: 4096, failAfter: 20_000)
        let box1 = try MediaBox(basePath: tmp.path + "/media", fetcher: failing)
        do {
            _ = try await box1.fetch(resource, info: MediaResourceStorageInfo(contentType: .video))
            XCTFail("expected the cut")
        } catch is PatternFetcher.Cut {}
        let partialData = try XCTUnwrap(box1.resourceData(resource.id))
        XCTAssertFalse(partialData.complete)
        XCTAssertEqual(partialData.size, 20_480)
        XCTAssertFalse(FileManager.default.fileExists(atPath: box1.paths(for: resource.id).complete))

        let second = PatternFetcher(chunk: 4096)
        let box2 = try MediaBox(basePath: tmp.path + "/media", fetcher: second)
        let data = try await box2.fetch(resource, info: MediaResourceStorageInfo(contentType: .video))
        XCTAssertEqual(second.requests.first?.missingRanges, [20_480..<50_000])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "video-9", count: 50_000))
    }

    func testInvalidRecordIsDiscardedAndRefetched() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-invalid-record")
        let resource = SimpleMediaResource("p", size: 8192)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: PatternFetcher(chunk: 1024, failAfter: 4096))
        _ = try? await box.fetch(resource, info: MediaResourceStorageInfo())
        let paths = box.paths(for: resource.id)
        let recorded = try XCTUnwrap(RangeRecordOnDisk.value(atPath: paths.partial))
        XCTAssertEqual(PartialFileMeta.decode(Data(recorded)), PartialFileMeta(totalSize: 8192, ranges: [0..<4096]))
        // Garble the data the record claims and damage the record (a value cut short, then a
        // foreign one): nothing of it may be trusted.
        for value in [Array(recorded.dropLast(3)), Array("not a record".utf8)] {
            try Data(repeating: 0xEE, count: 4096).write(to: URL(fileURLWithPath: paths.partial))
            try RangeRecordOnDisk.set(value, atPath: paths.partial)
            XCTAssertNil(box.heldRanges(resource.id), "readers see no ranges either")
            let reopened = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
            XCTAssertTrue(reopened.discardedInvalidRecord)
            XCTAssertEqual(reopened.ranges.totalBytes, 0)
            reopened.close()
        }
        let fetcher = PatternFetcher(chunk: 1024)
        let box2 = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let data = try await box2.fetch(resource, info: MediaResourceStorageInfo())
        XCTAssertEqual(fetcher.requests.first?.missingRanges, [0..<8192])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "p", count: 8192))
    }

    func testUnknownSizeFromFetcher() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-size")
        let fetcher = PatternFetcher(chunk: 3000, reportSize: 7000)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let data = try await box.fetch(SimpleMediaResource("u", size: nil), info: MediaResourceStorageInfo())
        XCTAssertEqual(data.size, 7000)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "u", count: 7000))
    }

    func testCancellingTheOnlyCallerStopsTheFetchAndKeepsThePartial() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-cancel")
        let resource = SimpleMediaResource("slow", size: 102_400)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: PatternFetcher(chunk: 1024, delay: .milliseconds(20)))
        let task = Task { try await box.fetch(resource, info: MediaResourceStorageInfo()) }
        let deadline = Date().addingTimeInterval(5)
        while (box.resourceData(resource.id)?.size ?? 0) < 4096, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let cancelled = Date()
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("the fetch was cancelled")
        } catch is CancellationError {}
        XCTAssertLessThan(Date().timeIntervalSince(cancelled), 0.5, "the caller stops waiting at once")

        // The flight itself stopped: the file does not complete behind the caller's back, and a
        // new fetch (another MediaBox, as the next run would open) resumes from the partial file.
        try await Task.sleep(for: .milliseconds(300))
        let kept = try XCTUnwrap(box.resourceData(resource.id))
        XCTAssertFalse(kept.complete)
        XCTAssertGreaterThan(kept.size, 0)
        let second = PatternFetcher(chunk: 4096)
        let box2 = try MediaBox(basePath: tmp.path + "/media", fetcher: second)
        let data = try await box2.fetch(resource, info: MediaResourceStorageInfo())
        XCTAssertEqual(second.calls, 1)
        let missing = try XCTUnwrap(second.requests.first?.missingRanges)
        XCTAssertLessThan(missing.reduce(0) { $0 + $1.count }, 102_400, "resumed, not refetched: \(missing)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "slow", count: 102_400))
    }

    func testACancelledCallerLeavesTheOthersFetching() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-cancel-one")
        let fetcher = PatternFetcher(chunk: 1024, delay: .milliseconds(5))
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let resource = SimpleMediaResource("shared-cancel", size: 32_768)
        let leaving = Task { try await box.fetch(resource, info: MediaResourceStorageInfo()) }
        let staying = Task { try await box.fetch(resource, info: MediaResourceStorageInfo()) }
        try await Task.sleep(for: .milliseconds(30))
        leaving.cancel()
        do {
            _ = try await leaving.value
            XCTFail("the first caller was cancelled")
        } catch is CancellationError {}
        let data = try await staying.value
        XCTAssertTrue(data.complete)
        XCTAssertEqual(fetcher.calls, 1, "the other caller's fetch went on, not restarted")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "shared-cancel", count: 32_768))
    }

    func testConcurrentRequestsShareOneFetch() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-shared")
        let fetcher = PatternFetcher(chunk: 1024, delay: .milliseconds(5))
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let resource = SimpleMediaResource("shared", size: 16_384)
        async let a = box.fetch(resource, info: MediaResourceStorageInfo())
        async let b = box.fetch(resource, info: MediaResourceStorageInfo())
        async let c = box.fetch(resource, info: MediaResourceStorageInfo())
        let results = try await [a, b, c]
        XCTAssertEqual(fetcher.calls, 1)
        XCTAssertTrue(results.allSatisfy { $0.complete && $0.size == 16_384 })
        XCTAssertEqual(try box.stats().total, StorageUsage(bytes: 16_384, count: 1))
    }

    func testManyConcurrentDownloadsShareGroupSyncs() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-group")
        let fetcher = PatternFetcher(chunk: 5000)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher, options: MediaBox.Options(completionSync: .group))
        let results = try await withThrowingTaskGroup(of: MediaResourceData.self) { group in
            for i in 0..<64 {
                group.addTask {
                    try await box.fetch(SimpleMediaResource("g\(i)", size: Int64(1000 + i * 100)), info: MediaResourceStorageInfo(contentType: .sticker))
                }
            }
            return try await group.reduce(into: [MediaResourceData]()) { $0.append($1) }
        }
        XCTAssertEqual(results.count, 64)
        XCTAssertEqual(fetcher.calls, 64)
        for i in 0..<64 {
            let path = box.paths(for: MediaResourceId("g\(i)")).complete
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), MediaTestPattern.bytes(id: "g\(i)", count: 1000 + i * 100))
        }
        XCTAssertEqual(try box.stats().byContentType[.sticker]?.count, 64)
        XCTAssertEqual(try MediaShard.storedFileNames(in: tmp.path + "/media").filter { $0.contains("_") }, [])
    }

    func testCompletionCutsBytesBeyondTheSizeAnEarlierWriterLeft() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-cut")
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: PatternFetcher(), options: MediaBox.Options(completionSync: .fsync))
        // An earlier writer left 800 bytes under each partial name; the resources are 500 long.
        for name in ["fetched", "stored"] {
            let stale = try XCTUnwrap(MediaBoxPartialFile.open(paths: box.paths(for: MediaResourceId(name)), in: box.directory, wait: true))
            try stale.setSize(800)
            try stale.write(offset: 0, data: MediaTestPattern.bytes(id: name, count: 800))
            stale.close()
        }
        // The fetch finds every byte present and completes without fetching, through `complete`.
        let fetched = try await box.fetch(SimpleMediaResource("fetched", size: 500), info: MediaResourceStorageInfo(contentType: .file))
        XCTAssertEqual(fetched.size, 500)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: fetched.path)), MediaTestPattern.bytes(id: "fetched", count: 500))
        // A batch store writes 500 bytes over the 800 and completes them as a batch.
        let stored = try box.storeBatch(
            [(MediaResourceId("stored"), MediaTestPattern.bytes(id: "stored", count: 500))], info: { _ in MediaResourceStorageInfo(contentType: .file) })
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored[0].path)), MediaTestPattern.bytes(id: "stored", count: 500))
        XCTAssertEqual(try box.stats().total, StorageUsage(bytes: 1000, count: 2))
    }

    func testPartialOpenedWithoutRecordingWritesNoRecord() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-norecord")
        let box = try MediaBox(basePath: tmp.path + "/media")
        let paths = box.paths(for: MediaResourceId("n"))
        let p = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true, recordsRanges: false))
        try p.setSize(10)
        try p.write(offset: 0, data: Data(repeating: 7, count: 10))
        XCTAssertNil(RangeRecordOnDisk.value(atPath: paths.partial))
        p.close()
        // A crash here leaves a partial without a record: a resume trusts nothing and starts from zero.
        let again = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
        XCTAssertEqual(again.ranges.totalBytes, 0)
        XCTAssertNil(again.knownSize)
        again.close()
    }

    /// The record is replaced at every part: after ranges grow in number and then merge (a
    /// shorter record), and after a reopen, it decodes to exactly the ranges held.
    func testRecordStaysExactAsRangesGrowAndMerge() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-recordlength")
        let box = try MediaBox(basePath: tmp.path + "/media")
        let paths = box.paths(for: MediaResourceId("m"))
        func onDisk() throws -> PartialFileMeta { try XCTUnwrap(MediaBoxPartialFile.record(of: paths, in: box.directory)) }
        let p = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
        try p.setSize(100)
        for offset in stride(from: Int64(0), to: 100, by: 20) { try p.write(offset: offset, data: Data(repeating: 1, count: 10)) }
        XCTAssertEqual(try onDisk().ranges.count, 5)
        for offset in stride(from: Int64(10), to: 100, by: 20) { try p.write(offset: offset, data: Data(repeating: 2, count: 10)) }
        XCTAssertEqual(try onDisk(), PartialFileMeta(totalSize: 100, ranges: [0..<100]))
        p.close()
        // A new partial file under the same name: its record went with the old one.
        try FileManager.default.removeItem(atPath: paths.partial)
        let again = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
        XCTAssertEqual(again.ranges.totalBytes, 0, "a new file: nothing recorded")
        XCTAssertNil(again.knownSize)
        try again.setSize(100)
        try again.write(offset: 50, data: Data(repeating: 3, count: 10))
        try again.write(offset: 0, data: Data(repeating: 3, count: 10))
        XCTAssertEqual(try onDisk(), PartialFileMeta(totalSize: 100, ranges: [0..<10, 50..<60]))
        try again.write(offset: 10, data: Data(repeating: 3, count: 40))
        XCTAssertEqual(try onDisk(), PartialFileMeta(totalSize: 100, ranges: [0..<60]))
        again.close()
    }

    func testStoreBatchWithOneSync() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-batch")
        let box = try MediaBox(basePath: tmp.path + "/media")
        let items = (0..<600).map { (MediaResourceId("b\($0)"), MediaTestPattern.bytes(id: "b\($0)", count: 300)) }
        let out = try box.storeBatch(items, info: { _ in MediaResourceStorageInfo(peerId: PeerId(9), contentType: .photo, location: .cache) }, accessTime: 5)
        XCTAssertEqual(out.count, 600)
        XCTAssertTrue(out.allSatisfy { $0.complete && $0.size == 300 })
        XCTAssertEqual(try box.stats().byLocation[.cache], StorageUsage(bytes: 180_000, count: 600))
        XCTAssertEqual(MediaBoxFixtures.findByteCount(tmp.path + "/media"), 180_000)
        let reader = try XCTUnwrap(box.openForReading(MediaResourceId("b7"), location: .cache))
        XCTAssertEqual(try reader.readAll(), MediaTestPattern.bytes(id: "b7", count: 300))
    }
}
