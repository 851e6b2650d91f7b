import Foundation
import XCTest

@testable import CloudServer

/// A photo file's served bytes are a JPEG of the photo size's dimensions, exactly as long as the
/// dataset says, the same for the same seed and file, different for another, and any range of it
/// is the same slice of the whole.
final class PhotoJPEGTests: XCTestCase {
    func served(_ jpeg: PhotoJPEG, offset: Int64 = 0, count: Int? = nil) -> Data {
        var d = Data(count: count ?? Int(jpeg.size))
        d.withUnsafeMutableBytes { jpeg.fill($0, offset: offset) }
        return d
    }

    func testServedBytesAreAWholeJPEGOfTheFilesSizeAndDimensions() throws {
        let generator = ByteGenerator(seed: 7)
        // 1,503 bytes for a 100×75 photo up to 2 MB for a 2560×1920 one (several comment segments).
        for (w, h, size) in [(100, 75, Int64(1_503)), (800, 600, 150_001), (2560, 1920, 2_000_000)] {
            let jpeg = try XCTUnwrap(PhotoJPEG.make(width: w, height: h, generator: generator, fileId: 3, size: size), "\(w)x\(h)")
            let bytes = served(jpeg)
            XCTAssertEqual(Int64(bytes.count), size)
            XCTAssertEqual(Array(bytes.prefix(2)), [0xFF, 0xD8])
            // Walk the segments from the start: comment segments, then the JPEG's own, to its frame.
            var i = 2
            var frame: (Int, Int)?
            while i + 4 <= bytes.count, frame == nil {
                XCTAssertEqual(bytes[i], 0xFF, "a segment starts at \(i)")
                let marker = bytes[i + 1]
                let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
                if marker == 0xC0 { frame = (Int(bytes[i + 7]) << 8 | Int(bytes[i + 8]), Int(bytes[i + 5]) << 8 | Int(bytes[i + 6])) }
                i += 2 + length
            }
            XCTAssertEqual(frame?.0, w)
            XCTAssertEqual(frame?.1, h)
            // The end marker is the last thing before at most three trailing bytes.
            XCTAssertNotNil(bytes.suffix(5).range(of: Data([0xFF, 0xD9])), "\(w)x\(h)")
            // Any range is the same slice of the whole.
            for (offset, count) in [(0, 10), (1, 7), (Int(size) / 3, min(4096, Int(size) / 2)), (Int(size) - 100, 100)] {
                XCTAssertEqual(served(jpeg, offset: Int64(offset), count: count), bytes.subdata(in: offset..<offset + count), "\(offset)+\(count)")
            }
        }
    }

    func testTheSameSeedAndFileDrawTheSamePhoto() throws {
        let a = try XCTUnwrap(PhotoJPEG.make(width: 320, height: 240, generator: ByteGenerator(seed: 1), fileId: 5, size: 40_000))
        let b = try XCTUnwrap(PhotoJPEG.make(width: 320, height: 240, generator: ByteGenerator(seed: 1), fileId: 5, size: 40_000))
        let other = try XCTUnwrap(PhotoJPEG.make(width: 320, height: 240, generator: ByteGenerator(seed: 2), fileId: 5, size: 40_000))
        XCTAssertEqual(served(a), served(b))
        XCTAssertNotEqual(served(a), served(other))
    }
}
