import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// A representation for tests: its id and tier.
private struct TestRepresentation: MediaRepresentation {
    let uniqueId: String
    let keepDuration: MediaStorageTier
}

/// Makes "<representation>(<source bytes>)" and counts its calls; fails for sources it is told to.
private final class RecordingGenerator: MediaRepresentationGenerator, @unchecked Sendable {
    // @unchecked Sendable: `calls` is only touched under `lock`.
    private let lock = NSLock()
    private var _calls = 0
    var calls: Int { lock.withLock { _calls } }

    struct Corrupt: Error {}

    func generate(_ representation: any MediaRepresentation, from source: MediaResourceData) async throws -> Data {
        lock.withLock { _calls += 1 }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source.path))
        if bytes.starts(with: Data("corrupt".utf8)) { throw Corrupt() }
        return Data("\(representation.uniqueId)(".utf8) + bytes + Data(")".utf8)
    }
}

/// Makes several representations in one call (as a decoder that reads the source once does)
/// and counts the calls of each form.
private final class BatchGenerator: MediaRepresentationGenerator, @unchecked Sendable {
    // @unchecked Sendable: the counters are only touched under `lock`.
    private let lock = NSLock()
    private var _singleCalls = 0
    private var _batches: [[String]] = []
    var singleCalls: Int { lock.withLock { _singleCalls } }
    var batches: [[String]] { lock.withLock { _batches } }

    func generate(_ representation: any MediaRepresentation, from source: MediaResourceData) async throws -> Data {
        lock.withLock { _singleCalls += 1 }
        return Data("\(representation.uniqueId)".utf8)
    }

    func generate(_ representations: [any MediaRepresentation], from source: MediaResourceData) async throws -> [Data] {
        lock.withLock { _batches.append(representations.map(\.uniqueId)) }
        return representations.map { Data("\($0.uniqueId) of \(source.size) bytes".utf8) }
    }
}

final class RepresentationTests: XCTestCase {
    let now: Int64 = 1_000_000
    private let thumbnail = TestRepresentation(uniqueId: "thumbnail-200x200", keepDuration: .general)
    private let placeholder = TestRepresentation(uniqueId: "placeholder-10x10", keepDuration: .shortLived)

    func testRepresentationsAreEntriesOfTheirOwnInTheirTiersFolders() async throws {
        let f = try CacheFixture("reps")
        try f.add("photo", size: 100, accessTime: now)
        let generator = RecordingGenerator()
        let info = MediaResourceStorageInfo(peerId: PeerId(7), contentType: .photo)
        let (thumb, made) = try await f.box.representation(of: MediaResourceId("photo"), thumbnail, info: info, generator: generator)
        XCTAssertTrue(made)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: thumb.path)).prefix(18), Data("thumbnail-200x200(".utf8))
        XCTAssertTrue(thumb.path.contains("/cache/"), thumb.path)
        let (blur, _) = try await f.box.representation(of: MediaResourceId("photo"), placeholder, info: info, generator: generator)
        XCTAssertTrue(blur.path.contains("/short-cache/"), blur.path)
        // The second request finds the stored one.
        let (again, madeAgain) = try await f.box.representation(of: MediaResourceId("photo"), thumbnail, info: info, generator: generator)
        XCTAssertFalse(madeAgain)
        XCTAssertEqual(again, thumb)
        XCTAssertEqual(generator.calls, 2)
        let stats = try f.box.stats()
        XCTAssertEqual(stats.byLocation[.cache]?.count, 1)
        XCTAssertEqual(stats.byLocation[.shortCache]?.count, 1)
        XCTAssertEqual(stats.byTier[.shortLived], StorageUsage(bytes: blur.size, count: 1))
        XCTAssertEqual(stats.byTier[.general], StorageUsage(bytes: 100 + thumb.size, count: 2))
        let row = try XCTUnwrap(
            f.box.storageBox.entry(MediaStorageKey(location: .cache, id: MediaBox.representationId(of: MediaResourceId("photo"), thumbnail))))
        XCTAssertEqual(row.info.peerId, PeerId(7))
        XCTAssertEqual(row.info.contentType, .photo)
        try f.assertTotalsMatchDisk()
    }

    func testAFailedOrMissingSourceStoresNothing() async throws {
        let f = try CacheFixture("reps-fail")
        try f.box.store(Data("corrupt bytes".utf8), id: MediaResourceId("bad"), info: MediaResourceStorageInfo(contentType: .photo))
        let generator = RecordingGenerator()
        do {
            _ = try await f.box.representation(of: MediaResourceId("bad"), thumbnail, info: MediaResourceStorageInfo(), generator: generator)
            XCTFail("a failing generator must fail the representation")
        } catch is RecordingGenerator.Corrupt {}
        do {
            _ = try await f.box.representation(of: MediaResourceId("absent"), thumbnail, info: MediaResourceStorageInfo(), generator: generator)
            XCTFail("no resource, no representation")
        } catch let e as MediaRepresentationError {
            XCTAssertEqual(e, .resourceNotComplete(id: "absent"))
        }
        XCTAssertEqual(try f.box.stats().total.count, 1)
        XCTAssertNil(f.box.cachedRepresentation(of: MediaResourceId("bad"), thumbnail))
        try f.assertTotalsMatchDisk()
    }

    /// The missing representations of a resource are asked of the generator in one call (one
    /// read of the source), stored each in its tier with its row; those already stored are not
    /// asked for again, and a second request makes nothing.
    func testMissingRepresentationsAreMadeInOneGeneratorCallAndStoredEachInItsTier() async throws {
        let f = try CacheFixture("reps-batch")
        try f.add("photo", size: 100, accessTime: now)
        let id = MediaResourceId("photo")
        let display = TestRepresentation(uniqueId: "display-1280x1280", keepDuration: .general)
        let generator = BatchGenerator()
        let info = MediaResourceStorageInfo(peerId: PeerId(7), contentType: .photo)
        _ = try await f.box.representation(of: id, thumbnail, info: info, generator: generator)
        XCTAssertEqual(generator.batches, [["thumbnail-200x200"]])
        let results = try await f.box.representations(of: id, [display, thumbnail, placeholder], info: info, generator: generator)
        XCTAssertEqual(generator.batches, [["thumbnail-200x200"], ["display-1280x1280", "placeholder-10x10"]], "only the missing ones, in one call")
        XCTAssertEqual(generator.singleCalls, 0)
        XCTAssertEqual(results.map(\.generated), [true, false, true])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: results[0].data.path)), Data("display-1280x1280 of 100 bytes".utf8))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: results[1].data.path)), Data("thumbnail-200x200 of 100 bytes".utf8))
        XCTAssertTrue(results[2].data.path.contains("/short-cache/"), results[2].data.path)
        for (representation, location) in [(display, MediaStorageLocation.cache), (placeholder, .shortCache)] {
            let row = try XCTUnwrap(f.box.storageBox.entry(MediaStorageKey(location: location, id: MediaBox.representationId(of: id, representation))))
            XCTAssertEqual(row.info.peerId, PeerId(7))
            XCTAssertEqual(row.info.location, location)
        }
        let again = try await f.box.representations(of: id, [display, thumbnail, placeholder], info: info, generator: generator)
        XCTAssertEqual(again.map(\.generated), [false, false, false])
        XCTAssertEqual(generator.batches.count, 2, "nothing made twice")
        try f.assertTotalsMatchDisk()
    }

    /// Representations made with `makeRepresentations` are neither files nor rows until stored;
    /// several resources' are then stored together through a `BatchStore` (a group commit that
    /// takes whatever is pending: here, batches of at most 4 while 3 adders run at once), and
    /// after `flush` each is complete, with its row in its tier, and found, not made, again.
    func testMadeRepresentationsAreStoredOnlyThroughAStoreAndManyResourcesShareItsBatches() async throws {
        let f = try CacheFixture("reps-group")
        let ids = (0..<24).map { MediaResourceId("photo-\($0)") }
        for id in ids { try f.add(id.stringRepresentation, size: 50, accessTime: now) }
        let generator = BatchGenerator()
        let info = MediaResourceStorageInfo(peerId: PeerId(9), contentType: .photo)
        let policy: [any MediaRepresentation] = [thumbnail, placeholder]
        let made = try await f.box.makeRepresentations(of: ids[0], policy, info: info, generator: generator)
        XCTAssertEqual(made.compactMap(\.made).map(\.id), policy.map { MediaBox.representationId(of: ids[0], $0) })
        XCTAssertEqual(made.compactMap(\.made).map(\.info.location), [.cache, .shortCache])
        XCTAssertNil(f.box.cachedRepresentation(of: ids[0], thumbnail), "made is not stored")
        XCTAssertNil(try f.box.storageBox.entry(MediaStorageKey(location: .cache, id: MediaBox.representationId(of: ids[0], thumbnail))))

        let store = BatchStore(mediaBox: f.box, durability: f.box.storeDurability, maxCount: 4)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<3 {
                group.addTask {
                    for id in ids.enumerated().filter({ $0.offset % 3 == worker }).map(\.element) {
                        for item in try await f.box.makeRepresentations(of: id, policy, info: info, generator: generator) {
                            guard let (repId, bytes, repInfo) = item.made else { continue }
                            try await store.add(repId, bytes, info: repInfo)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await store.flush()
        for id in ids {
            for (representation, location) in [(thumbnail, MediaStorageLocation.cache), (placeholder, .shortCache)] {
                let stored = try XCTUnwrap(f.box.cachedRepresentation(of: id, representation), id.stringRepresentation)
                XCTAssertEqual(
                    try Data(contentsOf: URL(fileURLWithPath: stored.path)), Data("\(representation.uniqueId) of 50 bytes".utf8))
                let row = try XCTUnwrap(f.box.storageBox.entry(MediaStorageKey(location: location, id: MediaBox.representationId(of: id, representation))))
                XCTAssertEqual(row.info.peerId, PeerId(9))
                XCTAssertEqual(row.size, stored.size)
            }
        }
        let again = try await f.box.makeRepresentations(of: ids[5], policy, info: info, generator: generator)
        XCTAssertEqual(again.compactMap(\.stored).count, 2, "found, not made again")
        try f.assertTotalsMatchDisk()
    }

    /// A complete representation file whose row a crash did not let be written gets its row the
    /// next time it is asked for, and is not made again.
    func testAFileWithoutItsRowIsIndexedNotRemade() async throws {
        let f = try CacheFixture("reps-row")
        try f.add("photo", size: 10, accessTime: now)
        let generator = RecordingGenerator()
        let (thumb, _) = try await f.box.representation(of: MediaResourceId("photo"), thumbnail, info: MediaResourceStorageInfo(), generator: generator)
        let key = MediaStorageKey(location: .cache, id: MediaBox.representationId(of: MediaResourceId("photo"), thumbnail))
        _ = try f.box.storageBox.remove([key])
        XCTAssertTrue(FileManager.default.fileExists(atPath: thumb.path))
        let (again, made) = try await f.box.representation(of: MediaResourceId("photo"), thumbnail, info: MediaResourceStorageInfo(), generator: generator)
        XCTAssertFalse(made)
        XCTAssertEqual(again.size, thumb.size)
        XCTAssertNotNil(try f.box.storageBox.entry(key))
        try f.assertTotalsMatchDisk()
    }

    /// Evicting a resource leaves its representations; each goes by its own tier's TTL.
    func testRepresentationsOutliveTheirResourceAndExpireByTheirOwnTier() async throws {
        let f = try CacheFixture("reps-evict")
        try f.add("photo", size: 1000, accessTime: now - 500)
        try f.add("other", size: 1000, accessTime: now - 10)
        let generator = RecordingGenerator()
        let id = MediaResourceId("photo")
        _ = try await f.box.representation(of: id, thumbnail, info: MediaResourceStorageInfo(), generator: generator)
        _ = try await f.box.representation(of: id, placeholder, info: MediaResourceStorageInfo(), generator: generator)
        let thumbKey = MediaStorageKey(location: .cache, id: MediaBox.representationId(of: id, thumbnail))
        let blurKey = MediaStorageKey(location: .shortCache, id: MediaBox.representationId(of: id, placeholder))
        try f.box.storageBox.setAccessTimes([(thumbKey, now - 400), (blurKey, now - 400)])
        // The size limit evicts the photo (least recently used); its representations stay.
        let evicted = try f.cleanup(CleanupOptions(sizeLimit: 3100, now: now))  // 4,039 bytes: the photo is the oldest
        XCTAssertEqual(evicted.removed.count, 1)
        XCTAssertFalse(f.exists("photo"))
        XCTAssertNotNil(f.box.cachedRepresentation(of: id, thumbnail))
        XCTAssertNotNil(f.box.cachedRepresentation(of: id, placeholder))
        // The short-lived TTL takes the placeholder; the general TTL is not reached.
        let expired = try f.cleanup(CleanupOptions(generalTTL: 1000, shortLivedTTL: 300, now: now))
        XCTAssertEqual(expired.expired.count, 1)
        XCTAssertNotNil(f.box.cachedRepresentation(of: id, thumbnail))
        XCTAssertNil(f.box.cachedRepresentation(of: id, placeholder))
        try f.assertTotalsMatchDisk()
    }

    /// A tier over its own limit loses its least recently used entries, and only those, even
    /// when the cache as a whole is under every limit.
    func testEachTierHasItsOwnSizeLimit() throws {
        let f = try CacheFixture("tier-limits")
        for i in 0..<5 {
            try f.add("g\(i)", size: 100, accessTime: now - 1000 + Int64(i))
            try f.add("s\(i)", size: 100, accessTime: now - 2000 + Int64(i), location: .shortCache)
        }
        var options = CleanupOptions(sizeLimit: 10_000, now: now)
        options.tierSizeLimits = [.shortLived: 250]
        let report = try f.cleanup(options)
        XCTAssertEqual((0..<5).filter { !f.exists("s\($0)", .shortCache) }, [0, 1, 2])
        XCTAssertEqual((0..<5).filter { !f.exists("g\($0)") }, [])
        XCTAssertEqual(report.evicted, StorageUsage(bytes: 300, count: 3))
        XCTAssertTrue(report.withinLimits)
        // Both limits together: the general tier loses g0 to its own limit; then the whole cache
        // (600 bytes) is brought under 500 from the least recently used of either tier: s3.
        options.tierSizeLimits = [.shortLived: 250, .general: 400]
        options.sizeLimit = 500
        _ = try f.cleanup(options)
        XCTAssertEqual((0..<5).filter { !f.exists("g\($0)") }, [0])
        XCTAssertEqual((0..<5).filter { !f.exists("s\($0)", .shortCache) }, [0, 1, 2, 3])
        try f.assertTotalsMatchDisk()
    }
}
