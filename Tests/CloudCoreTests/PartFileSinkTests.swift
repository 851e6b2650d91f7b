import Foundation
import TestSupport
import XCTest

@testable import CloudCore
@testable import MediaBox

/// A streamed part reaches the partial file in whole blocks at offsets that are multiples of the
/// block size, whatever sizes its chunks arrive in, and its last, shorter block at `commit()`.
final class PartFileSinkTests: XCTestCase {
    func testStreamedChunksReachTheFileInWholeAlignedBlocksAndTheTailAtCommit() async throws {
        let tmp = TemporaryDirectory(prefix: "part-file-sink")
        let path = tmp.path + "/doc_partial"
        let fd = open(path, O_CREAT | O_RDWR, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let writer = try MediaResourcePartWriter(duplicating: fd, path: path)
        let block = PartFileSink.blockSize
        let part = PartSpec(offset: Int64(2 * block), limit: Int64(3 * block))
        let sink = PartFileSink(writer: writer, part: part)
        guard case .sink(_, let consume) = sink.destination(maxLength: part.limit) else { return XCTFail("not a sink") }

        let bytes = (0..<(3 * block - 5)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        // Chunk sizes as a stream leaves them after an answer's headers: none on a block's edge.
        var at = 0
        let sizes = [1000, 70_000, 3, block - 1, 17]
        for size in sizes + [bytes.count - sizes.reduce(0, +)] {
            try bytes[at..<(at + size)].withUnsafeBytes { try consume($0) }
            at += size
            let inFile = Int(try XCTUnwrap(try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
            let whole = at / block * block
            XCTAssertEqual(inFile, whole == 0 ? 0 : 2 * block + whole, "after \(at) bytes only whole blocks are in the file")
        }
        XCTAssertEqual(at, bytes.count)
        XCTAssertEqual(sink.received, Int64(bytes.count))

        try await sink.commit()
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertEqual(data.count, 2 * block + bytes.count)
        XCTAssertEqual([UInt8](data.suffix(bytes.count)), bytes, "every byte at its offset in the part")
        XCTAssertTrue(data.prefix(2 * block).allSatisfy { $0 == 0 }, "nothing written before the part")
    }
}
