import Foundation
import Postbox
import TestSupport
import XCTest

@testable import MediaBox

/// Hands each part over whole, as a transport does for a writer that prefers whole parts:
/// gathered in the writer's part buffer in small chunks, then `writePart`. Records whether each
/// writer preferred whole parts and wrote directly while the fetch ran.
final class WholePartFetcher: MediaResourceFetcher, @unchecked Sendable {
    private let lock = NSLock()
    private var _observed: [(prefersWholeParts: Bool, writesDirectly: Bool)] = []
    let partSize: Int

    init(partSize: Int = 1 << 20) { self.partSize = partSize }

    var observed: [(prefersWholeParts: Bool, writesDirectly: Bool)] { lock.withLock { _observed } }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let id = request.resource.id.stringRepresentation
        let size = request.knownSize ?? 0
        let partSize = self.partSize
        return AsyncThrowingStream { continuation in
            Task {
                do {
                    guard let writer = request.partWriter else { throw MediaBoxError.noFetcher }
                    var offset: Int64 = 0
                    while offset < size {
                        let n = Int(min(Int64(partSize), size - offset))
                        let bytes = MediaTestPattern.bytes(id: id, offset: offset, count: n)
                        if writer.prefersWholeParts {
                            guard let buffer = MediaResourcePartBuffer(capacity: n) else { throw MediaBoxError.noFetcher }
                            var at = 0
                            while at < n {
                                let end = min(at + 16_384, n)
                                let appended = bytes[at..<end].withUnsafeBytes { buffer.append($0) }
                                XCTAssertTrue(appended)
                                at = end
                            }
                            try await writer.writePart(buffer, at: offset)
                        } else {
                            try bytes.withUnsafeBytes { try writer.write($0, at: offset) }
                        }
                        continuation.yield(.dataWritten(offset: offset, length: n))
                        offset += Int64(n)
                    }
                    self.lock.withLock { self._observed.append((writer.prefersWholeParts, writer.writesDirectly)) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }
}

final class DirectWriteTests: XCTestCase {
    func testLargeFileWhoseCompletionSyncsIsWrittenWithDirectIOAndLeavesNoPageCache() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-direct-write")
        try XCTSkipUnless(MediaBoxFixtures.takesDirectWrites(tmp.path), "this file system takes no direct writes")
        // 8 MiB and an unaligned end: the last part's final 5 bytes go through the page cache.
        let size = (8 << 20) + 4096 + 5
        let resource = SimpleMediaResource("doc-direct-io", size: Int64(size))
        let fetcher = WholePartFetcher()
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo())
        XCTAssertTrue(data.complete)
        XCTAssertEqual(fetcher.observed.map(\.prefersWholeParts), [true])
        XCTAssertEqual(fetcher.observed.map(\.writesDirectly), [true], "the parts went to the device, not the page cache")
        let resident = try MediaBoxFixtures.residentPages(data.path)
        XCTAssertLessThanOrEqual(resident, 2, "written with direct I/O, the file is not in the page cache (\(resident) pages are)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "doc-direct-io", count: size))
    }

    func testPartsAFetcherHandsOverInMemoryAreWrittenDirectlyToo() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-direct-write-parts")
        try XCTSkipUnless(MediaBoxFixtures.takesDirectWrites(tmp.path), "this file system takes no direct writes")
        let size = (8 << 20) + 100
        let resource = SimpleMediaResource("doc-direct-parts", size: Int64(size))
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: PatternFetcher(chunk: 1 << 20))
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo())
        let resident = try MediaBoxFixtures.residentPages(data.path)
        XCTAssertLessThanOrEqual(resident, 2, "CDN-style parts in memory went past the page cache too (\(resident) pages are in it)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "doc-direct-parts", count: size))
    }

    func testSmallFilesAndUnsyncedCompletionsStreamThroughThePageCache() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-direct-write-not")
        let large = SimpleMediaResource("doc-unsynced", size: 8 << 20)
        let small = SimpleMediaResource("doc-small", size: (8 << 20) - 1)
        let unsynced = WholePartFetcher()
        let box1 = try MediaBox(basePath: tmp.path + "/media1", fetcher: unsynced, options: MediaBox.Options(completionSync: .none))
        let d1 = try await box1.fetch(large, info: MediaResourceStorageInfo())
        let synced = WholePartFetcher()
        let box2 = try MediaBox(basePath: tmp.path + "/media2", fetcher: synced)
        let d2 = try await box2.fetch(small, info: MediaResourceStorageInfo())
        XCTAssertEqual(unsynced.observed.map(\.prefersWholeParts), [false], "nothing syncs the file: the page cache is the cheaper way")
        XCTAssertEqual(synced.observed.map(\.prefersWholeParts), [false], "below the size of a file that completes with its own fsync")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: d1.path)), MediaTestPattern.bytes(id: "doc-unsynced", count: 8 << 20))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: d2.path)), MediaTestPattern.bytes(id: "doc-small", count: (8 << 20) - 1))
    }

    func testPartBufferRefusesBytesPastItsCapacity() throws {
        // A pool block, and a mapping of its own for a part larger than a block.
        for capacity in [10, PartMemoryPool.blockSize + 10] {
            let buffer = try XCTUnwrap(MediaResourcePartBuffer(capacity: capacity))
            let first = Data(repeating: 7, count: capacity - 4)
            XCTAssertTrue(first.withUnsafeBytes { buffer.append($0) })
            XCTAssertFalse(Data(count: 5).withUnsafeBytes { buffer.append($0) }, "\(capacity + 1) bytes in a \(capacity)-byte part")
            XCTAssertEqual(buffer.count, capacity - 4, "a refused chunk appends nothing")
            XCTAssertTrue(Data(repeating: 9, count: 4).withUnsafeBytes { buffer.append($0) })
            XCTAssertEqual(Data(buffer.bytes), first + Data(repeating: 9, count: 4))
        }
    }

    func testWholePartWrittenAfterTheFetchEndedIsRefused() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-direct-write-revoke")
        let resource = SimpleMediaResource("doc-direct-revoke", size: 9 << 20)
        let fetcher = DirectWritingFetcher(chunk: 1 << 20)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo())
        let writer = try XCTUnwrap(fetcher.writers.first)
        let buffer = try XCTUnwrap(MediaResourcePartBuffer(capacity: 4096))
        XCTAssertTrue(Data(repeating: 0xAB, count: 4096).withUnsafeBytes { buffer.append($0) })
        do {
            try await writer.writePart(buffer, at: 0)
            XCTFail("the fetch has ended: the write must be refused")
        } catch MediaBoxError.io(let path, _, _) {
            XCTAssertEqual(path, box.paths(for: resource.id).partial)
        }
        XCTAssertEqual(
            try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "doc-direct-revoke", count: 9 << 20),
            "the complete file is untouched")
    }
}
