import Foundation
import MediaBox
import XCTest

@testable import Jobs

/// libvips is loaded with `dlopen` the first time a representation is made: a host that cannot
/// load it fails `generate-representations` as a whole with a configuration error naming the
/// Debian package, not photo by photo; one that can has it mapped once loaded.
final class VipsLibraryTests: XCTestCase {
    /// A shared object no host has: the loader's own path, only the name differs.
    static let missing = "libvips-missing-for-a-test.so.42"

    func testALibraryThatCannotBeLoadedIsAConfigurationErrorNamingThePackage() {
        XCTAssertThrowsError(try VipsLibrary.load(Self.missing)) { error in
            guard let error = error as? JobError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.exitCode, .config)
            XCTAssertEqual(error.exitCode.rawValue, 78)
            XCTAssertFalse(error.retryable, "a retry does not install a package")
            XCTAssertTrue(error.message.hasPrefix("generate-representations needs libvips (Debian package libvips42)"), error.message)
            XCTAssertTrue(error.message.contains(Self.missing + ": "), "names what it tried to load: \(error.message)")
            XCTAssertTrue(error.message.contains("cannot open shared object file"), "the loader's reason: \(error.message)")
        }
    }

    func testAMissingLibvipsFailsTheRunNotEachPhoto() async throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let box = try MediaBox(basePath: directory.appendingPathComponent("media").path)
        let info = MediaResourceStorageInfo(contentType: .photo)
        let photos = try (0..<3).map { i in
            let id = MediaResourceId("photo-\(i)")
            _ = try box.store(Data([0xFF, 0xD8, 0xFF, UInt8(i)]), id: id, info: info)
            return RepresentationSelection.Photo(id: id, info: info, accessTime: 0)
        }
        let sink = try LogSink(root: DataRoot(url: directory), process: "jobrun", minimumLevel: .debug, console: .off)
        let generator = VipsRepresentationGenerator(library: { () throws(JobError) in try VipsLibrary.load(Self.missing) })
        let policy = [PhotoRepresentation(kind: .thumbnail, box: 200, keepDuration: .general)]
        do {
            _ = try await GenerateRepresentationsJob.generate(
                photos, policy: policy, box: box, generator: generator, concurrency: 2, log: JobLogger(sink: sink))
            XCTFail("the run must fail")
        } catch let error as JobError {
            XCTAssertEqual(error.exitCode, .config, error.message)
            XCTAssertTrue(error.message.contains("libvips42"), error.message)
        }
        for photo in photos {
            XCTAssertNil(box.cachedRepresentation(of: photo.id, policy[0]), "nothing made")
        }
    }

    func testLibvipsIsMappedOnceLoaded() throws {
        _ = try VipsLibrary.shared.get()
        // Read to its end: /proc files report a size of 0.
        let file = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/self/maps"))
        defer { try? file.close() }
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        XCTAssertTrue(maps.contains("libc.so.6"), "the maps are read: \(maps.prefix(300))")
        XCTAssertTrue(maps.contains("/" + VipsLibrary.soname), "libvips is mapped into the process that loaded it")
    }
}
