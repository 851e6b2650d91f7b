import ConfinedFiles
import Foundation
import Postbox
import TestSupport
import XCTest

@testable import MediaBox

/// `storeBatch` writes files under no name and links them once synced, or under their partial
/// names where unnamed files are off (or the file system has none); both publish the same.
final class BatchFileTests: XCTestCase {
    func testUnnamedAndPartialBatchFilesStoreTheSame() throws {
        for unnamed in [true, false] {
            let tmp = TemporaryDirectory(prefix: "mediabox-batchfile")
            let media = tmp.path + "/media"
            let box = try MediaBox(basePath: media, options: MediaBox.Options(unnamedBatchFiles: unnamed))
            // An interrupted download of s0 left a partial recording its first 100 bytes; nobody
            // writes it now. The batch replaces it, and the complete file carries no record.
            let stale = try XCTUnwrap(MediaBoxPartialFile.open(paths: box.paths(for: MediaResourceId("s0")), in: box.directory, wait: true))
            try stale.setSize(700)
            try stale.write(offset: 0, data: MediaTestPattern.bytes(id: "s0", count: 100))
            stale.close()
            XCTAssertNotNil(RangeRecordOnDisk.value(atPath: box.paths(for: MediaResourceId("s0")).partial))
            // s1 is complete already: it is kept and only touched.
            try box.storeBatch(
                [(MediaResourceId("s1"), MediaTestPattern.bytes(id: "s1", count: 700))], info: { _ in MediaResourceStorageInfo() }, accessTime: 1)

            let items = (0..<300).map { (MediaResourceId("s\($0)"), MediaTestPattern.bytes(id: "s\($0)", count: 700 + $0)) }
            let out = try box.storeBatch(items, info: { _ in MediaResourceStorageInfo(peerId: PeerId(4), contentType: .photo) }, accessTime: 9)
            XCTAssertEqual(out.map(\.size), items.enumerated().map { $0.offset == 1 ? 700 : Int64($0.element.1.count) }, "unnamed: \(unnamed)")
            for (i, (id, data)) in items.enumerated() where i != 1 {
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: box.paths(for: id).complete)), data, "unnamed: \(unnamed), \(id)")
            }
            XCTAssertEqual(try MediaShard.storedFileNames(in: media).filter { $0.contains("_") }, [], "unnamed: \(unnamed): no partial names left")
            for (id, _) in items { XCTAssertNil(RangeRecordOnDisk.value(atPath: box.paths(for: id).complete), "unnamed: \(unnamed), \(id)") }
            XCTAssertEqual(try box.stats().total.count, 300)
            XCTAssertEqual(MediaBoxFixtures.findByteCount(media), try box.stats().total.bytes)
        }
    }

    func testAnUnnamedFileNeverLinkedLeavesNothing() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-unlinked")
        let directory = tmp.path + "/shard/ab"
        let file = try XCTUnwrap(UnnamedFile.create(in: "shard/ab", of: ConfinedDirectory.open(path: tmp.path)), "this file system has O_TMPFILE")
        let data = Data(repeating: 3, count: 4096)
        try data.withUnsafeBytes { try PosixFile.pwriteAll(file.descriptor, $0, offset: 0, path: directory) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [], "written, not yet named")
        file.close()  // what the process's death does to it
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [])
    }

    func testTheSecondLinkOfOneNameChangesNothing() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-twolinks")
        let path = tmp.path + "/r"
        let base = try ConfinedDirectory.open(path: tmp.path)
        let first = try XCTUnwrap(UnnamedFile.create(in: "", of: base))
        let second = try XCTUnwrap(UnnamedFile.create(in: "", of: base))
        defer { first.close(); second.close() }
        try Data("first".utf8).withUnsafeBytes { try PosixFile.pwriteAll(first.descriptor, $0, offset: 0, path: path) }
        try Data("second".utf8).withUnsafeBytes { try PosixFile.pwriteAll(second.descriptor, $0, offset: 0, path: path) }
        XCTAssertTrue(try first.link(to: "r", in: base))
        XCTAssertFalse(try second.link(to: "r", in: base))
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "first")
        XCTAssertThrowsError(try second.link(to: "missing/r", in: base), "a failed link is an error naming the path") { error in
            XCTAssertTrue("\(error)".contains(tmp.path + "/missing"), "\(error)")
        }
    }

    func testAPartialBeingWrittenIsLeftToItsWriter() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-livepartial")
        let box = try MediaBox(basePath: tmp.path + "/media")
        let paths = box.paths(for: MediaResourceId("live"))
        let full = MediaTestPattern.bytes(id: "live", count: 900)
        // Another fetch is writing the same resource and holds its partial's lock.
        let writer = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
        try writer.setSize(900)
        try writer.write(offset: 0, data: full.prefix(300))

        try box.storeBatch([(MediaResourceId("live"), full)], info: { _ in MediaResourceStorageInfo() })
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: paths.complete)), full)
        XCTAssertTrue(FileManager.default.fileExists(atPath: paths.partial), "the writer's partial is not removed under it")

        // The writer finishes and finds the name taken by the same bytes.
        try writer.write(offset: 300, data: full.dropFirst(300))
        try writer.complete(sync: false)
        writer.close()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: paths.complete)), full)
        XCTAssertFalse(FileManager.default.fileExists(atPath: paths.partial))
        XCTAssertNil(RangeRecordOnDisk.value(atPath: paths.complete), "the writer's record went with its partial name")
    }
}
