import Foundation
import MediaBox
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Files dropped into the media folders by hand: counted as "not indexed" with their bytes,
/// indexed when they carry a resource's name (moved into their shard first), and removed by a
/// reconciling cleanup once older than the immunity window when they do not.
final class ForeignFileTests: XCTestCase {
    private static let info = MediaResourceStorageInfo(contentType: .file)

    private func drop(_ path: String, bytes: Int, age: TimeInterval) throws {
        try Data(repeating: 7, count: bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: path)
    }

    func testFilesDroppedAtTheTopOfAShardedStoreAreCountedThenIndexedOrRemoved() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-foreign")
        let box = try MediaBox(basePath: tmp.path + "/media", options: MediaBox.Options(completionSync: .none))
        try box.store(Data(repeating: 1, count: 100), id: MediaResourceId("kept"), info: Self.info)
        let resourceName = MediaResourceId("dropped").safeFileName
        try drop(box.basePath + "/" + resourceName, bytes: 1_000_000, age: 7200)
        try drop(box.basePath + "/cache/my notes (copy)", bytes: 2_000_000, age: 7200)
        try drop(box.basePath + "/cache/fresh notes", bytes: 5, age: 0)
        XCTAssertEqual(symlink("/etc/hostname", box.basePath + "/short-cache/planted link"), 0)
        let old = timespec(tv_sec: Int(Date().timeIntervalSince1970) - 7200, tv_nsec: 0)
        XCTAssertEqual(utimensat(AT_FDCWD, box.basePath + "/short-cache/planted link", [old, old], AT_SYMLINK_NOFOLLOW), 0)

        // Seen by a walk that changes nothing (`jobrun stats`), beside the index's own totals.
        XCTAssertEqual(try box.stats().total, StorageUsage(bytes: 100, count: 1))
        XCTAssertEqual(try box.notIndexed(), StorageUsage(bytes: 3_000_005, count: 4))
        XCTAssertTrue(FileManager.default.fileExists(atPath: box.basePath + "/" + resourceName), "stats moved nothing")

        // A reconciling cleanup: the resource-named file is moved into its shard and indexed,
        // the old foreign file removed, the young one left, the link removed (not its target).
        let report = try TimeBasedCleanup(mediaBox: box).run(CleanupOptions(immunityWindow: 3600, reconcile: true))
        let reconciliation = try XCTUnwrap(report.reconciliation)
        XCTAssertEqual(reconciliation.movedIntoShards, 1)
        XCTAssertEqual(reconciliation.indexedFiles, StorageUsage(bytes: 1_000_000, count: 1))
        XCTAssertEqual(reconciliation.removedForeignFiles.count, 1 + 0 + 1, "old file and link; the young file stays")
        XCTAssertTrue(FileManager.default.fileExists(atPath: box.paths(for: MediaResourceId("dropped")).complete))
        XCTAssertFalse(FileManager.default.fileExists(atPath: box.basePath + "/cache/my notes (copy)"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: box.basePath + "/cache/fresh notes"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: "/etc/hostname"))
        XCTAssertEqual(try box.stats().total, StorageUsage(bytes: 1_000_100, count: 2))
        XCTAssertEqual(try box.notIndexed(), StorageUsage(bytes: 5, count: 1))
    }
}
