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

    /// The placeholder's blur, done on its few pixels instead of by libvips (whose mask would be
    /// built and evaluated for each photo), matches libvips's exact `gaussblur` of the same
    /// pixels within a level (libvips's box approximation is within two of it), and blurs: it
    /// changes pixels, and a flat image stays flat.
    func testThePlaceholderBlurMatchesLibvips() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let vips = try VipsLibrary.shared.get()
        let path = directory.appendingPathComponent("photo.jpg").path
        try ClouddPhotos.jpeg(seed: 7, fileId: 3, width: 800, height: 600).write(to: URL(fileURLWithPath: path))
        // A 40×30 image in memory (larger than a placeholder, so the edges are not all of it).
        let lazy = try XCTUnwrap(vips.thumbnail(file: path, width: 40, height: 40), vips.takeError())
        defer { vips.unref(lazy) }
        let source = try XCTUnwrap(vips.copyMemory(lazy), vips.takeError())
        defer { vips.unref(source) }
        let original = try XCTUnwrap(vips.ucharPixels(source))
        let mine = GaussianBlur(sigma: 0.8).apply(original)
        let blurredByLibvips = try XCTUnwrap(vips.gaussblur(source, sigma: 0.8), vips.takeError())
        defer { vips.unref(blurredByLibvips) }
        let theirs = try XCTUnwrap(vips.copyMemory(blurredByLibvips), vips.takeError())
        defer { vips.unref(theirs) }
        let reference = try XCTUnwrap(vips.ucharPixels(theirs))
        XCTAssertEqual([reference.width, reference.height, reference.bands], [mine.width, mine.height, mine.bands])
        let worst = zip(mine.bytes, reference.bytes).map { abs(Int($0) - Int($1)) }.max() ?? 0
        XCTAssertLessThanOrEqual(worst, 1, "largest difference from libvips's exact gaussblur, in levels")
        XCTAssertGreaterThan(zip(mine.bytes, original.bytes).filter { $0 != $1 }.count, original.bytes.count / 4, "blurred")
        // Back into an image and out: the same pixels.
        let wrapped = try XCTUnwrap(vips.image(mine), vips.takeError())
        defer { vips.unref(wrapped) }
        XCTAssertEqual(vips.ucharPixels(wrapped), mine)
        let flat = GaussianBlur(sigma: 0.8).apply(UcharPixels(bytes: [UInt8](repeating: 77, count: 10 * 8 * 3), width: 10, height: 8, bands: 3))
        XCTAssertEqual(Set(flat.bytes), [77])
    }
}
