import ConfinedFiles
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// Stores written in the flat layout (every file directly in its location's directory) are moved
/// into their shard folders by the first writable open, and a migration killed at any point
/// loses nothing and is finished by the next open.
final class ShardMigrationTests: XCTestCase {
    /// A flat store as an older build left it: complete files, rows in StorageBox, no layout record.
    private struct FlatStore {
        let media: String
        let ids: [(String, MediaStorageLocation)]

        init(_ media: String, count: Int, size: Int = 24) throws {
            self.media = media
            let locations = MediaStorageLocation.allCases
            var ids: [(String, MediaStorageLocation)] = []
            var entries: [StorageBoxEntry] = []
            for location in locations {
                try FileManager.default.createDirectory(
                    atPath: ResourceStorePaths.locationDirectory(mediaDirectory: media, location: location), withIntermediateDirectories: true)
            }
            for i in 0..<count {
                let id = "m\(i)"
                let location = locations[i % locations.count]
                let path = ResourceStorePaths(mediaDirectory: media, location: location, id: MediaResourceId(id), layout: .flat).complete
                XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: MediaTestPattern.bytes(id: id, count: size)))
                ids.append((id, location))
                entries.append(
                    StorageBoxEntry(
                        id: MediaResourceId(id), info: MediaResourceStorageInfo(peerId: PeerId(Int64(i % 4 + 1)), contentType: .photo, location: location),
                        size: Int64(size), accessTime: 1_000_000 + Int64(i)))
            }
            let index = try StorageBox(directory: media + "/storage")
            try index.insert(entries)
            XCTAssertEqual(try index.mediaLayout(), .flat)
            self.ids = ids
        }

        /// Where a resource's complete file is now: in its shard, in the flat place, or both
        /// (one inode with two names).
        func places(_ id: String, _ location: MediaStorageLocation) -> (sharded: Bool, flat: Bool) {
            let fm = FileManager.default
            return (
                fm.fileExists(atPath: ResourceStorePaths(mediaDirectory: media, location: location, id: MediaResourceId(id)).complete),
                fm.fileExists(atPath: ResourceStorePaths(mediaDirectory: media, location: location, id: MediaResourceId(id), layout: .flat).complete)
            )
        }

        /// Files still directly in a location directory (not yet moved).
        func flatFileCount() throws -> Int {
            try MediaStorageLocation.allCases.reduce(0) { sum, location in
                let dir = ResourceStorePaths.locationDirectory(mediaDirectory: media, location: location)
                return sum
                    + (try FileManager.default.contentsOfDirectory(atPath: dir).filter { name in
                        var st = stat()
                        return lstat(dir + "/" + name, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
                    }.count)
            }
        }
    }

    func testFlatStoreMovesIntoShardsOnOpen() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-migrate")
        let media = tmp.path + "/media"
        let store = try FlatStore(media, count: 300)
        // A download in progress in the flat layout: partial data and its ranges map.
        let flatPartial = ResourceStorePaths(mediaDirectory: media, location: .resources, id: MediaResourceId("half"), layout: .flat)
        let partial = try XCTUnwrap(MediaBoxPartialFile.open(paths: flatPartial, in: ConfinedDirectory.open(path: media), wait: true))
        try partial.setSize(8192)
        try partial.write(offset: 0, data: MediaTestPattern.bytes(id: "half", count: 4096))
        partial.close()
        // One an earlier version left, its ranges in a `_partial.meta` file beside it.
        let oldPartial = ResourceStorePaths(mediaDirectory: media, location: .resources, id: MediaResourceId("old"), layout: .flat)
        try MediaTestPattern.bytes(id: "old", count: 2048).write(to: URL(fileURLWithPath: oldPartial.partial))
        try Data(PartialFileMeta(totalSize: 8192, ranges: [0..<2048]).encode())
            .write(to: URL(fileURLWithPath: oldPartial.complete + ResourceStorePaths.legacyMetaSuffix))
        // A file an earlier, interrupted run left with both names (same inode).
        let (id0, location0) = store.ids[0]
        try FileManager.default.createDirectory(
            atPath: ResourceStorePaths(mediaDirectory: media, location: location0, id: MediaResourceId(id0)).directory, withIntermediateDirectories: true)
        XCTAssertEqual(
            link(
                ResourceStorePaths(mediaDirectory: media, location: location0, id: MediaResourceId(id0), layout: .flat).complete,
                ResourceStorePaths(mediaDirectory: media, location: location0, id: MediaResourceId(id0)).complete), 0)
        // A name MediaBox never writes stays where it is.
        XCTAssertTrue(FileManager.default.createFile(atPath: media + "/notes.txt", contents: Data("x".utf8)))

        // A read-only look before any writer opened it sees the flat layout.
        let before = try MediaBox(basePath: media, readOnly: true)
        XCTAssertEqual(before.layout, .flat)
        XCTAssertEqual(try before.stats().total.count, 300)
        XCTAssertNotNil(before.resourceData(MediaResourceId("m1"), location: store.ids[1].1))

        let box = try MediaBox(basePath: media, fetcher: PatternFetcher(chunk: 1024))
        XCTAssertEqual(box.layout, .sharded)
        XCTAssertEqual(try box.storageBox.mediaLayout(), .sharded)
        XCTAssertEqual(try store.flatFileCount(), 1, "only the foreign file is left in a location directory")
        XCTAssertTrue(FileManager.default.fileExists(atPath: media + "/notes.txt"))
        for (id, location) in store.ids {
            XCTAssertTrue(store.places(id, location) == (true, false), "\(id) in its shard only")
            let reader = try XCTUnwrap(box.openForReading(MediaResourceId(id), location: location, touch: false), id)
            XCTAssertEqual(try reader.readAll(), MediaTestPattern.bytes(id: id, count: 24))
            reader.close()
        }
        // The moved partial resumes where it stopped.
        let resumed = try XCTUnwrap(box.resourceData(MediaResourceId("half")))
        XCTAssertEqual(resumed.size, 4096)
        XCTAssertFalse(resumed.complete)
        let fetcher = PatternFetcher(chunk: 1024)
        let done = try await box.fetch(SimpleMediaResource("half", size: 8192), info: MediaResourceStorageInfo(), fetcher: fetcher)
        XCTAssertEqual(fetcher.requests.first?.missingRanges, [4096..<8192])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: done.path)), MediaTestPattern.bytes(id: "half", count: 8192))
        // The earlier version's meta moved with its partial file, and its ranges are imported.
        let old = box.paths(for: MediaResourceId("old"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: old.complete + ResourceStorePaths.legacyMetaSuffix), "moved into the shard")
        let oldFetcher = PatternFetcher(chunk: 1024)
        let oldDone = try await box.fetch(SimpleMediaResource("old", size: 8192), info: MediaResourceStorageInfo(), fetcher: oldFetcher)
        XCTAssertEqual(oldFetcher.requests.first?.missingRanges, [2048..<8192])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: oldDone.path)), MediaTestPattern.bytes(id: "old", count: 8192))
        XCTAssertFalse(FileManager.default.fileExists(atPath: old.complete + ResourceStorePaths.legacyMetaSuffix))

        // Index and disk agree: reconciliation has nothing to drop or add.
        let report = try Reconciliation.run(mediaBox: box, options: ReconciliationOptions(settleTime: 0), now: 2_000_000_000)
        XCTAssertEqual(report.droppedRows.count, 0)
        XCTAssertEqual(report.indexedFiles.count, 0)
        XCTAssertEqual(report.foreignFiles, 1)
        XCTAssertEqual(try box.stats().total.count, 302)
        // Opening again does not migrate again (the layout is recorded).
        XCTAssertEqual(try MediaBox(basePath: media).layout, .sharded)
    }

    func testSigkillDuringMigrationLosesNothingAndTheNextOpenFinishes() throws {
        _ = try Products.builtExecutable("jobrun-testkit")
        let tmp = TemporaryDirectory(prefix: "mediabox-migrate-kill")
        let media = tmp.path + "/media"
        let count = 20_000
        let store = try FlatStore(media, count: count, size: 8)
        var interrupted = 0
        var random = SystemRandomNumberGenerator()
        for round in 0..<6 {
            let child = try ChildProcess(MediaBoxFixtures.testkit, ["open-media", media])
            let delayMs = Int.random(in: (round * 40)...(round * 40 + 60), using: &random)
            usleep(useconds_t(delayMs * 1000))
            child.signal(SIGKILL)
            child.wait(timeout: 10)
            let finished = child.stdout.contains("opened")
            var moved = 0
            for (id, location) in store.ids {
                let place = store.places(id, location)
                XCTAssertTrue(place.sharded || place.flat, "round \(round) (killed after \(delayMs) ms): \(id) is reachable")
                if place.sharded { moved += 1 }
                let path = ResourceStorePaths(mediaDirectory: media, location: location, id: MediaResourceId(id), layout: place.sharded ? .sharded : .flat)
                    .complete
                XCTAssertEqual(FileManager.default.contents(atPath: path), MediaTestPattern.bytes(id: id, count: 8), "round \(round): \(id) intact")
            }
            if moved > 0 && moved < count { interrupted += 1 }
            print("round \(round): killed after \(delayMs) ms, \(moved) of \(count) moved\(finished ? ", finished" : "")")
            if finished { break }
        }
        XCTAssertGreaterThan(interrupted, 0, "at least one kill landed mid-migration")
        let box = try MediaBox(basePath: media)
        XCTAssertEqual(box.layout, .sharded)
        XCTAssertEqual(try store.flatFileCount(), 0)
        for (id, location) in store.ids {
            XCTAssertTrue(store.places(id, location) == (true, false), "\(id) in its shard only")
        }
        XCTAssertEqual(try box.stats().total.count, Int64(count))
        XCTAssertEqual(MediaBoxFixtures.findByteCount(media), Int64(count * 8))
    }
}
