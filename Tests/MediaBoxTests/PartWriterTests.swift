import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// Writes the test pattern through the request's part writer and reports each chunk as written,
/// except the chunks in `unreported`: those get wrong bytes and no report (a part that failed its
/// verification after being written). Keeps the writers it was given.
final class DirectWritingFetcher: MediaResourceFetcher, @unchecked Sendable {
    struct Cut: Error {}
    private let lock = NSLock()
    private var _writers: [MediaResourcePartWriter] = []
    let chunk: Int
    let unreported: Set<Int64>

    init(chunk: Int, unreported: Set<Int64> = []) {
        self.chunk = chunk
        self.unreported = unreported
    }

    var writers: [MediaResourcePartWriter] { lock.withLock { _writers } }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        guard let writer = request.partWriter else { return AsyncThrowingStream { $0.finish(throwing: Cut()) } }
        lock.withLock { _writers.append(writer) }
        let id = request.resource.id.stringRepresentation
        let size = request.knownSize ?? 0
        let (chunk, unreported) = (self.chunk, self.unreported)
        return AsyncThrowingStream { continuation in
            do {
                for range in request.missingRanges {
                    var offset = range.lowerBound
                    while offset < min(range.upperBound, size) {
                        let n = Int(min(Int64(chunk), size - offset))
                        if unreported.contains(offset) {
                            try Data(repeating: 0xEE, count: n).withUnsafeBytes { try writer.write($0, at: offset) }
                        } else {
                            try MediaTestPattern.bytes(id: id, offset: offset, count: n).withUnsafeBytes { try writer.write($0, at: offset) }
                            continuation.yield(.dataWritten(offset: offset, length: n))
                        }
                        offset += Int64(n)
                    }
                }
                if unreported.isEmpty { continuation.finish() } else { continuation.finish(throwing: Cut()) }
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }
}

final class PartWriterTests: XCTestCase {
    func testWrittenBytesCountOnlyOnceReportedAndUnreportedOnesAreFetchedAgain() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-part-writer")
        let resource = SimpleMediaResource("doc-direct", size: 20_000)
        let first = DirectWritingFetcher(chunk: 4096, unreported: [4096, 12_288])
        let box1 = try MediaBox(basePath: tmp.path + "/media", fetcher: first)
        do {
            _ = try await box1.fetch(resource, info: MediaResourceStorageInfo())
            XCTFail("expected the cut")
        } catch is DirectWritingFetcher.Cut {}
        let paths = box1.paths(for: resource.id)
        let meta = try XCTUnwrap(MediaBoxPartialFile.record(of: paths, in: box1.directory))
        XCTAssertEqual(meta.ranges, [0..<4096, 8192..<12_288, 16_384..<20_000], "unreported parts are not recorded")
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: paths.partial))
        XCTAssertEqual(onDisk[4096..<8192], Data(repeating: 0xEE, count: 4096), "the unreported bytes were written, not recorded")

        let second = PatternFetcher(chunk: 4096)
        let box2 = try MediaBox(basePath: tmp.path + "/media", fetcher: second)
        let data = try await box2.fetch(resource, info: MediaResourceStorageInfo())
        XCTAssertEqual(second.requests.first?.missingRanges, [4096..<8192, 12_288..<16_384])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "doc-direct", count: 20_000))
    }

    func testWriterRefusesWritesOnceTheFetchHasEnded() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-part-writer-revoke")
        let resource = SimpleMediaResource("doc-revoke", size: 10_000)
        let fetcher = DirectWritingFetcher(chunk: 3000)
        let box = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo())
        let expected = MediaTestPattern.bytes(id: "doc-revoke", count: 10_000)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), expected)
        let writer = try XCTUnwrap(fetcher.writers.first)
        XCTAssertThrowsError(try Data(repeating: 0, count: 100).withUnsafeBytes { try writer.write($0, at: 0) }) { error in
            guard case MediaBoxError.io(let path, _, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, box.paths(for: resource.id).partial)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), expected, "the complete file is untouched")
    }
}
