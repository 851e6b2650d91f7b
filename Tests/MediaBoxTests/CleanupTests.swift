import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

final class CleanupTests: XCTestCase {
    let now: Int64 = 1_000_000

    /// 20 resources of 100 bytes, r0 oldest … r19 newest, shuffled insertion order.
    func makeTwenty(_ name: String) throws -> CacheFixture {
        let f = try CacheFixture(name)
        for i in (0..<20).shuffled() { try f.add("r\(i)", size: 100, accessTime: now - 10_000 + Int64(i) * 10) }
        return f
    }

    func testSizeLimitEvictsExactlyTheLeastRecentlyUsedUnlocked() throws {
        let f = try makeTwenty("lru")
        // r2 is being read (shared lock): it must survive, and r5 goes in its place.
        let reader = try XCTUnwrap(f.box.openForReading(MediaResourceId("r2"), touch: false))
        let report = try f.cleanup(CleanupOptions(sizeLimit: 1500, now: now))
        reader.close()
        let gone = (0..<20).filter { !f.exists("r\($0)") }
        XCTAssertEqual(gone, [0, 1, 3, 4, 5])
        XCTAssertEqual(report.skippedLocked, 1)
        XCTAssertEqual(report.removed, StorageUsage(bytes: 500, count: 5))
        XCTAssertEqual(report.evicted, report.removed)
        XCTAssertEqual(report.after, StorageUsage(bytes: 1500, count: 15))
        XCTAssertTrue(report.withinLimits)
        XCTAssertEqual(report.byPeer, [CleanupUsageRow(peerId: 1, contentType: nil, count: 5, bytes: 500)])
        try f.assertTotalsMatchDisk()
    }

    /// Batches of 3: each batch's rows are deleted while the next batch's files are unlinked,
    /// and the last batch's at the end. Every removed file loses its row, in the TTL pass and the
    /// size pass alike, and a locked file in the middle of a batch keeps both.
    func testCleanupInSmallBatchesDropsTheRowOfEveryRemovedFile() throws {
        let f = try makeTwenty("batches")
        // r0 … r9 are past the TTL; r12 is being read when the size pass reaches it.
        var options = CleanupOptions(generalTTL: 9_905, sizeLimit: 600, now: now)
        options.batchSize = 3
        let reader = try XCTUnwrap(f.box.openForReading(MediaResourceId("r12"), touch: false))
        let report = try f.cleanup(options)
        reader.close()
        XCTAssertEqual((0..<20).filter { f.exists("r\($0)") }, [12, 15, 16, 17, 18, 19])
        XCTAssertEqual(report.expired, StorageUsage(bytes: 1000, count: 10))
        XCTAssertEqual(report.evicted, StorageUsage(bytes: 400, count: 4))
        XCTAssertEqual(report.skippedLocked, 1)
        XCTAssertEqual(report.after, StorageUsage(bytes: 600, count: 6))
        for i in 0..<20 {
            let row = try f.box.storageBox.entry(MediaStorageKey(location: .resources, id: MediaResourceId("r\(i)")))
            XCTAssertEqual(row != nil, f.exists("r\(i)"), "r\(i): a row exactly when the file is there")
        }
        try f.assertTotalsMatchDisk()
    }

    func testReadingMovesAResourceToTheBackOfTheQueue() throws {
        let f = try makeTwenty("touch")
        let reader = try XCTUnwrap(f.box.openForReading(MediaResourceId("r0"), accessTime: now))
        reader.close()
        _ = try f.cleanup(CleanupOptions(sizeLimit: 1800, now: now))
        XCTAssertTrue(f.exists("r0"))
        XCTAssertEqual((0..<20).filter { !f.exists("r\($0)") }, [1, 2])
    }

    func testTTLPerTier() throws {
        let f = try CacheFixture("ttl")
        try f.add("old-general", size: 10, accessTime: now - 5000)
        try f.add("new-general", size: 10, accessTime: now - 500)
        try f.add("old-cache", size: 10, accessTime: now - 5000, location: .cache)
        try f.add("old-short", size: 10, accessTime: now - 500, location: .shortCache)
        try f.add("new-short", size: 10, accessTime: now - 50, location: .shortCache)
        let report = try f.cleanup(CleanupOptions(generalTTL: 1000, shortLivedTTL: 100, now: now))
        XCTAssertFalse(f.exists("old-general"))
        XCTAssertTrue(f.exists("new-general"))
        XCTAssertFalse(f.exists("old-cache", .cache))
        XCTAssertFalse(f.exists("old-short", .shortCache))
        XCTAssertTrue(f.exists("new-short", .shortCache))
        XCTAssertEqual(report.expired, StorageUsage(bytes: 30, count: 3))
        XCTAssertEqual(report.evicted, StorageUsage())
        try f.assertTotalsMatchDisk()
    }

    func testPeerClassAndContentTypeOverrides() throws {
        let f = try CacheFixture("override")
        try f.add("chan-photo", size: 10, accessTime: now - 3000, peer: 3, peerClass: .channels)
        try f.add("priv-photo", size: 10, accessTime: now - 3000, peer: 1, peerClass: .privateChats)
        try f.add("priv-video", size: 10, accessTime: now - 3000, peer: 1, peerClass: .privateChats, type: .video)
        try f.add("group-photo", size: 10, accessTime: now - 3000, peer: 2, peerClass: .groups)
        _ = try f.cleanup(CleanupOptions(generalTTL: 10_000, peerClassTTL: [.channels: 1000], contentTypeTTL: [.video: 2000], now: now))
        XCTAssertFalse(f.exists("chan-photo"))
        XCTAssertTrue(f.exists("priv-photo"))
        XCTAssertFalse(f.exists("priv-video"))
        XCTAssertTrue(f.exists("group-photo"))
    }

    func testCountLimit() throws {
        let f = try makeTwenty("count")
        let report = try f.cleanup(CleanupOptions(countLimit: 12, now: now))
        XCTAssertEqual((0..<20).filter { !f.exists("r\($0)") }, Array(0..<8))
        XCTAssertEqual(report.after.count, 12)
    }

    func testExclusionsAndImmunity() throws {
        let f = try CacheFixture("exclude")
        try f.add("keep-peer", size: 100, accessTime: now - 900, peer: 42)
        try f.add("keep-voice", size: 100, accessTime: now - 800, type: .voice)
        try f.add("a", size: 100, accessTime: now - 700)
        try f.add("b", size: 100, accessTime: now - 600)
        try f.add("recent", size: 100, accessTime: now - 10)
        try f.add("recent2", size: 100, accessTime: now - 5)
        let report = try f.cleanup(
            CleanupOptions(
                generalTTL: 1, sizeLimit: 0, immunityWindow: 60,
                excludedPeers: [PeerId(42)], excludedContentTypes: [.voice], now: now))
        XCTAssertTrue(f.exists("keep-peer"))
        XCTAssertTrue(f.exists("keep-voice"))
        XCTAssertFalse(f.exists("a"))
        XCTAssertFalse(f.exists("b"))
        XCTAssertTrue(f.exists("recent"))
        XCTAssertTrue(f.exists("recent2"))
        XCTAssertGreaterThanOrEqual(report.skippedExcluded, 2)
        XCTAssertGreaterThanOrEqual(report.skippedImmune, 1)
        XCTAssertFalse(report.withinLimits)
        try f.assertTotalsMatchDisk()
    }

    func testDryRunListsVictimsAndTouchesNothing() throws {
        let f = try makeTwenty("dry")
        let before = MediaBoxFixtures.fileSizes(in: f.media)
        let statsBefore = try f.box.stats()
        let report = try f.cleanup(CleanupOptions(generalTTL: 9950, sizeLimit: 1000, dryRun: true, listVictims: 100, now: now))
        XCTAssertTrue(report.dryRun)
        XCTAssertEqual(report.victims.map(\.fileName), (0..<10).map { "r\($0)" })
        XCTAssertEqual(report.victims.filter { $0.reason == .expired }.map(\.fileName), ["r0", "r1", "r2", "r3", "r4"])
        XCTAssertEqual(report.removed, StorageUsage(bytes: 1000, count: 10))
        XCTAssertEqual(report.after, StorageUsage(bytes: 1000, count: 10))
        XCTAssertEqual(MediaBoxFixtures.fileSizes(in: f.media), before)
        XCTAssertEqual(try f.box.stats(), statsBefore)
        // The real run removes exactly what the dry run listed.
        let real = try f.cleanup(CleanupOptions(generalTTL: 9950, sizeLimit: 1000, now: now))
        XCTAssertEqual(real.removed, report.removed)
        XCTAssertEqual((0..<20).filter { !f.exists("r\($0)") }, Array(0..<10))
        try f.assertTotalsMatchDisk()
    }

    func testReportBreakdownByPeerAndContentTypeAgreesWithDisk() throws {
        let f = try CacheFixture("breakdown")
        var expectedPeer: [Int64: Int64] = [:]
        for i in 0..<60 {
            let peer = Int64(i % 4 + 1)
            let type = MediaContentType.allCases[i % MediaContentType.allCases.count]
            let size = 100 + i * 7
            try f.add("x\(i)", size: size, accessTime: now - 1000 + Int64(i), peer: peer, type: type)
            if i < 30 { expectedPeer[peer, default: 0] += Int64(size) }
        }
        let total = try f.box.stats().total.bytes
        let diskBefore = MediaBoxFixtures.findByteCount(f.media)
        XCTAssertEqual(diskBefore, total, "stats agree with the bytes on disk")
        let report = try f.cleanup(CleanupOptions(sizeLimit: total - expectedPeer.values.reduce(0, +), now: now))
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: report.byPeer.map { ($0.peerId!, $0.bytes) }), expectedPeer)
        XCTAssertEqual(report.byContentType.reduce(0) { $0 + $1.bytes }, report.removed.bytes)
        XCTAssertEqual(report.byPeerAndContentType.reduce(0) { $0 + $1.bytes }, report.removed.bytes)
        XCTAssertEqual(MediaBoxFixtures.findByteCount(f.media), diskBefore! - report.removed.bytes)
        try f.assertTotalsMatchDisk()
    }

    func testReconciliationFixesOrphansOnBothSides() throws {
        let f = try CacheFixture("reconcile")
        for i in 0..<5 { try f.add("k\(i)", size: 50, accessTime: now - 100) }
        // A row without a file, a file without a row, a stale partial, a leftover partial, and
        // an earlier version's meta left without its partial.
        try FileManager.default.removeItem(atPath: f.box.paths(for: MediaResourceId("k0")).complete)
        let orphan = f.box.paths(for: MediaResourceId("orphan"))
        let stale = f.box.paths(for: MediaResourceId("stale"))
        // Foreign writers create the shard folder, as MediaBox's first file in it would.
        for p in [orphan, stale] { try FileManager.default.createDirectory(atPath: p.directory, withIntermediateDirectories: true) }
        try Data(count: 77).write(to: URL(fileURLWithPath: orphan.complete))
        let writer = try XCTUnwrap(MediaBoxPartialFile.open(paths: stale, in: f.box.directory, wait: true))
        try writer.setSize(100)
        try writer.write(offset: 0, data: Data(count: 33))
        writer.close()
        let oldMeta = orphan.complete + ResourceStorePaths.legacyMetaSuffix
        try PartialFileMeta(totalSize: 100, ranges: [0..<33]).encode().withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: oldMeta)) }
        let leftover = f.box.paths(for: MediaResourceId("k1"))
        try FileManager.default.copyItem(atPath: leftover.complete, toPath: leftover.partial)
        let old = Date(timeIntervalSince1970: TimeInterval(now - 100_000))
        for p in [orphan.complete, stale.partial, oldMeta] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: p)
        }
        let report = try Reconciliation.run(mediaBox: f.box, options: ReconciliationOptions(stalePartialAge: 3600), now: now)
        XCTAssertEqual(report.droppedRows, StorageUsage(bytes: 50, count: 1))
        XCTAssertEqual(report.indexedFiles, StorageUsage(bytes: 77, count: 1))
        XCTAssertEqual(report.removedPartials.count, 3)
        XCTAssertEqual(report.foreignFiles, 0, "the old meta is MediaBox's own leftover, not a foreign file")
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale.partial))
        XCTAssertFalse(FileManager.default.fileExists(atPath: oldMeta))
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover.partial))
        XCTAssertTrue(FileManager.default.fileExists(atPath: leftover.complete))
        let row = try XCTUnwrap(f.box.storageBox.entry(MediaStorageKey(location: .resources, id: MediaResourceId("orphan"))))
        XCTAssertEqual(row.resourceId, "orphan")
        XCTAssertEqual(row.accessTime, now - 100_000)
        try f.assertTotalsMatchDisk()
        // The re-indexed orphan ages out like anything else.
        _ = try f.cleanup(CleanupOptions(generalTTL: 50_000, now: now))
        XCTAssertFalse(FileManager.default.fileExists(atPath: orphan.complete))
        try f.assertTotalsMatchDisk()
    }
}
