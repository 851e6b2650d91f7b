import ConfinedFiles
import Foundation
import TestSupport
import XCTest

@testable import MediaBox

/// The range record kept in the partial file's extended attribute: bounded in size, imported
/// from the `_partial.meta` files of earlier versions, and refused clearly where the file
/// system keeps no user attributes.
final class PartialRangeRecordTests: XCTestCase {
    /// A map of many more ranges than fit the budget: the record holds the range from offset 0
    /// and the largest others, never a byte that is not held, and a fetch resumes from exactly
    /// what it holds.
    func testAFragmentedMapIsRecordedInPartWithinTheBudget() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-fragmented")
        let box = try MediaBox(basePath: tmp.path + "/media")
        let id = "fragmented"
        let size: Int64 = 200_000
        let paths = box.paths(for: MediaResourceId(id))
        let p = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
        try p.setSize(size)
        // 1,000 ranges 200 bytes apart, of lengths 1 to 100 bytes (the one at 0 among the shortest).
        var held = RangeMap()
        for i in 0..<1000 {
            let offset = Int64(i) * 200
            let length = i == 0 ? 1 : 1 + (i * 37) % 100
            try p.write(offset: offset, data: MediaTestPattern.bytes(id: id, offset: offset, count: length))
            held.insert(offset..<(offset + Int64(length)))
        }
        XCTAssertEqual(p.ranges, held, "the writer itself knows every range")
        p.close()

        let raw = try XCTUnwrap(RangeRecordOnDisk.value(atPath: paths.partial))
        XCTAssertLessThanOrEqual(raw.count, PartialRangeRecord.budget)
        let record = try XCTUnwrap(MediaBoxPartialFile.record(of: paths, in: box.directory))
        XCTAssertEqual(record.totalSize, size)
        XCTAssertGreaterThan(record.ranges.count, 100)
        XCTAssertLessThan(record.ranges.count, 1000)
        XCTAssertEqual(record.ranges.first, 0..<1, "the range at offset 0 is kept")
        for r in record.ranges { XCTAssertTrue(held.ranges.contains(r), "recorded \(r) is a range held") }
        let shortestKept = record.ranges.dropFirst().map(\.count).min() ?? 0
        let longestLeft = held.ranges.filter { !record.ranges.contains($0) }.map(\.count).max() ?? 0
        XCTAssertGreaterThanOrEqual(shortestKept, longestLeft, "the largest ranges are the ones kept")

        // A fetch resumes from the recorded ranges: it asks for everything else, and the file
        // comes out whole and right.
        let fetcher = PatternFetcher(chunk: 4096)
        let box2 = try MediaBox(basePath: tmp.path + "/media", fetcher: fetcher)
        let data = try await box2.fetch(SimpleMediaResource(id, size: size), info: MediaResourceStorageInfo())
        XCTAssertEqual(fetcher.requests.first?.missingRanges, RangeMap(record.ranges).missing(upTo: size))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: id, count: Int(size)))
    }

    /// A store written by an earlier version keeps the ranges in `<name>_partial.meta`: the next
    /// open of the partial moves them into the partial file (cut to the bytes it holds) and
    /// removes the old file, and the fetch resumes range by range.
    func testAnEarlierVersionsMetaIsImportedAndTheFetchResumes() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-legacy-meta")
        let media = tmp.path + "/media"
        let id = "legacy"
        let size: Int64 = 10_000
        let box = try MediaBox(basePath: media)
        let paths = box.paths(for: MediaResourceId(id))
        let legacyMeta = paths.complete + ResourceStorePaths.legacyMetaSuffix
        try FileManager.default.createDirectory(atPath: paths.directory, withIntermediateDirectories: true)
        // 5,000 bytes written; the meta claims two ranges, the second running past the data.
        try MediaTestPattern.bytes(id: id, count: 5000).write(to: URL(fileURLWithPath: paths.partial))
        let meta = PartialFileMeta(totalSize: size, ranges: [0..<3000, 4000..<6000], headerRevision: 2)
        try Data(meta.encode()).write(to: URL(fileURLWithPath: legacyMeta))

        let fetcher = PatternFetcher(chunk: 1024)
        let box2 = try MediaBox(basePath: media, fetcher: fetcher)
        let opened = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box2.directory, wait: true))
        XCTAssertEqual(opened.ranges.ranges, [0..<3000, 4000..<5000])
        XCTAssertEqual(opened.knownSize, size)
        XCTAssertEqual(opened.headerRevision, 2)
        opened.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: legacyMeta), "imported once, then removed")
        XCTAssertEqual(
            MediaBoxPartialFile.record(of: paths, in: box2.directory),
            PartialFileMeta(totalSize: size, ranges: [0..<3000, 4000..<5000], headerRevision: 2))

        let data = try await box2.fetch(SimpleMediaResource(id, size: size), info: MediaResourceStorageInfo())
        XCTAssertEqual(fetcher.requests.first?.missingRanges, [3000..<4000, 5000..<10_000], "resumed, not restarted")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: id, count: Int(size)))
    }

    /// An earlier version's meta beside a partial that holds no data, or one that is recorded
    /// already, is a leftover: removed, never trusted.
    func testAnEarlierVersionsMetaBesideAnEmptyOrRecordedPartialIsDropped() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-legacy-leftover")
        let box = try MediaBox(basePath: tmp.path + "/media")
        for recorded in [false, true] {
            let paths = box.paths(for: MediaResourceId("leftover-\(recorded)"))
            let legacyMeta = paths.complete + ResourceStorePaths.legacyMetaSuffix
            if recorded {
                let p = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
                try p.setSize(100)
                try p.write(offset: 0, data: Data(repeating: 1, count: 10))
                p.close()
            } else {
                try FileManager.default.createDirectory(atPath: paths.directory, withIntermediateDirectories: true)
                try Data().write(to: URL(fileURLWithPath: paths.partial))
            }
            try Data(PartialFileMeta(totalSize: 100, ranges: [0..<100]).encode()).write(to: URL(fileURLWithPath: legacyMeta))
            let p = try XCTUnwrap(MediaBoxPartialFile.open(paths: paths, in: box.directory, wait: true))
            XCTAssertEqual(p.ranges.ranges, recorded ? [0..<10] : [], "recorded: \(recorded)")
            p.close()
            XCTAssertFalse(FileManager.default.fileExists(atPath: legacyMeta), "recorded: \(recorded)")
        }
    }

    /// On a file system without user extended attributes (ramfs), the first record of a partial
    /// fails with an error that names the media directory; no range is silently dropped.
    func testAFileSystemWithoutUserAttributesIsAClearError() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-no-xattr")
        let mountPoint = tmp.path + "/ramfs"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard getuid() == 0, Self.run("/bin/mount", ["-t", "ramfs", "none", mountPoint]) else {
            throw XCTSkip("mounting a ramfs needs root")
        }
        defer { _ = Self.run("/bin/umount", [mountPoint]) }
        let media = mountPoint + "/media"
        let box = try MediaBox(basePath: media, fetcher: PatternFetcher(chunk: 1024))
        do {
            _ = try await box.fetch(SimpleMediaResource("on-ramfs", size: 4096), info: MediaResourceStorageInfo())
            XCTFail("a partial cannot record its ranges here")
        } catch let error as MediaBoxError {
            XCTAssertEqual(error, .extendedAttributesUnsupported(directory: media))
            XCTAssertTrue("\(error)".contains(media), "\(error)")
            XCTAssertTrue("\(error)".contains("extended attributes"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: box.paths(for: MediaResourceId("on-ramfs")).complete))
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
