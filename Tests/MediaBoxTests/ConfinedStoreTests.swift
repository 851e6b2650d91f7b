import ConfinedFiles
import Foundation
import MediaBox
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Objects planted inside the media directory — a linked shard or cache folder, a FIFO under a
/// partial name, a folder anyone may write — are refused with an error naming them, and
/// nothing outside the directory is read, written or removed.
final class ConfinedStoreTests: XCTestCase {
    private struct Planted {
        let tmp = TemporaryDirectory(prefix: "mediabox-confined")
        var media: String { tmp.path + "/media" }
        var victim: String { tmp.path + "/victim" }

        init() throws {
            try FileManager.default.createDirectory(atPath: tmp.path + "/victim", withIntermediateDirectories: true)
            try Data("keep".utf8).write(to: URL(fileURLWithPath: victim + "/file"))
        }

        func assertVictimIntact(file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: victim), ["file"], file: file, line: line)
            XCTAssertEqual(try String(contentsOfFile: victim + "/file", encoding: .utf8), "keep", file: file, line: line)
        }
    }

    private static let info = MediaResourceStorageInfo(contentType: .file)

    func testALinkedShardFolderIsRefusedByStoreFetchAndCleanup() async throws {
        let p = try Planted()
        let box = try MediaBox(basePath: p.media, fetcher: PatternFetcher(), options: MediaBox.Options(completionSync: .none))
        try box.store(Data("old".utf8), id: MediaResourceId("old"), info: Self.info, accessTime: 1)
        let shard = box.paths(for: MediaResourceId("old")).directory
        // The shard is swapped for a link to the victim folder, which holds a file of the same name.
        try FileManager.default.removeItem(atPath: shard)
        XCTAssertEqual(symlink(p.victim, shard), 0)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: p.victim + "/old"))
        defer { try? FileManager.default.removeItem(atPath: p.victim + "/old") }

        XCTAssertThrowsError(try TimeBasedCleanup(mediaBox: box).run(CleanupOptions(sizeLimit: 0, now: 10))) { error in
            XCTAssertEqual(error as? ConfinedFileError, .symbolicLink(path: shard + "/old"), "\(error)")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: p.victim + "/old"), "cleanup removed nothing through the link")
        // A new resource of that shard: neither stored nor fetched into the victim.
        let sameShard = (0..<5000).map { "n\($0)" }.first { box.paths(for: MediaResourceId($0)).directory == shard }!
        XCTAssertThrowsError(try box.store(Data("x".utf8), id: MediaResourceId(sameShard), info: Self.info)) { error in
            XCTAssertTrue("\(error)".contains(shard), "\(error)")
        }
        do {
            _ = try await box.fetch(SimpleMediaResource(sameShard, size: 100), info: Self.info)
            XCTFail("the fetch wrote through a linked shard")
        } catch {
            XCTAssertEqual(error as? ConfinedFileError, .symbolicLink(path: shard + "/" + MediaResourceId(sameShard).safeFileName + "_partial"))
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: p.victim).sorted(), ["file", "old"])
        try FileManager.default.removeItem(atPath: p.victim + "/old")
        p.assertVictimIntact()
    }

    func testALinkedCacheFolderIsRefusedWhenTheStoreOpens() throws {
        let p = try Planted()
        _ = try MediaBox(basePath: p.media)
        try FileManager.default.removeItem(atPath: p.media + "/cache")
        XCTAssertEqual(symlink(p.victim, p.media + "/cache"), 0)
        XCTAssertThrowsError(try MediaBox(basePath: p.media)) { error in
            XCTAssertEqual(error as? ConfinedFileError, .symbolicLink(path: p.media + "/cache"))
        }
        p.assertVictimIntact()
    }

    func testAFIFOUnderThePartialNameIsRefusedAtOnce() async throws {
        let p = try Planted()
        let box = try MediaBox(basePath: p.media, fetcher: PatternFetcher())
        let paths = box.paths(for: MediaResourceId("stalled"))
        try FileManager.default.createDirectory(atPath: paths.directory, withIntermediateDirectories: true)
        XCTAssertEqual(mkfifo(paths.partial, 0o600), 0)
        let start = ContinuousClock.now
        do {
            _ = try await box.fetch(SimpleMediaResource("stalled", size: 100), info: Self.info)
            XCTFail("a FIFO was used as the partial file")
        } catch {
            XCTAssertEqual(error as? ConfinedFileError, .wrongType(path: paths.partial, found: .fifo, expected: .regular))
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(30), "refused at once, not at a timeout")
    }

    func testAWorldWritableShardIsRefused() throws {
        let p = try Planted()
        let box = try MediaBox(basePath: p.media, options: MediaBox.Options(completionSync: .none))
        try box.store(Data("a".utf8), id: MediaResourceId("a"), info: Self.info)
        let shard = box.paths(for: MediaResourceId("a")).directory
        XCTAssertEqual(chmod(shard, 0o777), 0)
        XCTAssertThrowsError(try TimeBasedCleanup(mediaBox: box).run(CleanupOptions(sizeLimit: 0, now: Int64(Date().timeIntervalSince1970) + 10_000))) {
            error in
            guard case .insecure(let path, let reason)? = error as? ConfinedFileError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, shard)
            XCTAssertTrue(reason.contains("writable"), reason)
        }
    }
}
