import CloudServer
import Foundation
import MediaBox
import XCTest

@testable import Jobs

/// Representations made from one decode with the real libvips: the thumbnail touches its box,
/// and the placeholder, shrunk from it by a whole factor and blurred, fits in its own box.
final class VipsRepresentationGeneratorTests: XCTestCase {
    /// Width and height of the JPEG `data`, as libvips reads it.
    func dimensions(_ data: Data, _ vips: VipsLibrary, in directory: URL) throws -> (width: Int, height: Int) {
        let path = directory.appendingPathComponent(UUID().uuidString + ".jpg").path
        try data.write(to: URL(fileURLWithPath: path))
        let image = try XCTUnwrap(vips.thumbnail(file: path, width: 100_000, height: 100_000), vips.takeError())
        defer { vips.unref(image) }
        return vips.size(image)
    }

    func testThePlaceholderIsShrunkFromTheThumbnailIntoItsBox() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let vips = try VipsLibrary.shared.get()
        // (photo size, placeholder box) → (thumbnail, placeholder): 200 ÷ 10 is a whole factor;
        // 200 ÷ 9 is not, and the factor is rounded up so the placeholder still fits.
        let cases: [((Int, Int), Int, (Int, Int), (Int, Int))] = [
            ((1280, 960), 10, (200, 150), (10, 8)),
            ((800, 600), 9, (200, 150), (9, 7)),
            ((600, 800), 10, (150, 200), (8, 10)),
        ]
        for (index, ((width, height), box, thumbnailSize, placeholderSize)) in cases.enumerated() {
            let path = directory.appendingPathComponent("photo-\(index).jpg").path
            try ClouddPhotos.jpeg(seed: 7, fileId: Int64(index + 1), width: width, height: height).write(to: URL(fileURLWithPath: path))
            let policy = [
                PhotoRepresentation(kind: .placeholder, box: box, keepDuration: .general),
                PhotoRepresentation(kind: .thumbnail, box: 200, keepDuration: .general),
            ]
            let made = try VipsRepresentationGenerator.make(policy, path: path, vips)
            XCTAssertEqual(made.count, 2)
            for data in made { XCTAssertEqual(Array(data.prefix(2)), [0xFF, 0xD8], "a JPEG") }
            let placeholder = try dimensions(made[0], vips, in: directory)
            let thumbnail = try dimensions(made[1], vips, in: directory)
            XCTAssertEqual([thumbnail.width, thumbnail.height], [thumbnailSize.0, thumbnailSize.1], "\(width)×\(height)")
            XCTAssertEqual([placeholder.width, placeholder.height], [placeholderSize.0, placeholderSize.1], "\(width)×\(height) into \(box)")
            // Made alone, from the file, it fits the same box.
            let alone = try dimensions(try VipsRepresentationGenerator.make(policy[0], path: path, vips), vips, in: directory)
            XCTAssertLessThanOrEqual(max(alone.width, alone.height), box)
        }
    }
}
