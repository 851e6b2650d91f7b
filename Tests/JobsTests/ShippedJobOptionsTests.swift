import CloudCore
import Foundation
import MediaBox
import Postbox
import XCTest

@testable import Jobs

/// Every shipped job file's parameters, followed through to the options its kind hands the layer
/// below: a parameter that is validated but dropped on the way would fail here.
final class ShippedJobOptionsTests: XCTestCase {
    private func shipped(_ name: String) throws -> JobFile {
        try JobFile.load(contentsOf: TestPaths.repositoryRoot.appendingPathComponent("jobs/\(name).yaml"))
    }

    func testCleanupFileReachesCleanupOptions() throws {
        let o = TimeBasedCleanupJob.options(try shipped("time-based-cleanup").params, dryRun: false)
        XCTAssertEqual(o.generalTTL, 7 * 86_400)
        XCTAssertEqual(o.shortLivedTTL, 86_400)
        XCTAssertEqual(o.peerClassTTL, [.channels: 3 * 86_400])
        XCTAssertEqual(o.contentTypeTTL, [.video: 3 * 86_400])
        XCTAssertEqual(o.sizeLimit, 2 << 30)
        XCTAssertNil(o.countLimit)
        XCTAssertEqual(o.immunityWindow, 600)
        XCTAssertEqual(o.excludedPeers, [])
        XCTAssertEqual(o.excludedContentTypes, [])
        XCTAssertTrue(o.reconcile)
        XCTAssertFalse(o.dryRun)
        XCTAssertEqual(o.listVictims, 0)
        // A forced dry run (`jobrun run --dry-run`) wins over the file and lists victims.
        let dry = TimeBasedCleanupJob.options(try shipped("time-based-cleanup").params, dryRun: true)
        XCTAssertTrue(dry.dryRun)
        XCTAssertGreaterThan(dry.listVictims, 0)

        let custom = try JobFile.parse(
            yaml: """
                name: c
                kind: time-based-cleanup
                params:
                  maxSize: 1GB
                  maxFiles: 500
                  excludePeers: [42, 7]
                  excludeContentTypes: [voice, sticker]
                  categoryTtl: {private: 2d, group: 1d}
                  immunity: 0s
                  reconcile: false
                  compactDatabase: false
                """, file: "c.yaml")
        let c = TimeBasedCleanupJob.options(custom.params, dryRun: false)
        XCTAssertEqual(c.sizeLimit, 1_000_000_000)
        XCTAssertEqual(c.countLimit, 500)
        XCTAssertEqual(c.excludedPeers, [PeerId(42), PeerId(7)])
        XCTAssertEqual(c.excludedContentTypes, [.voice, .sticker])
        XCTAssertEqual(c.peerClassTTL, [.privateChats: 2 * 86_400, .groups: 86_400])
        XCTAssertEqual(c.immunityWindow, 0)
        XCTAssertFalse(c.reconcile)
        XCTAssertFalse(custom.params[TimeBasedCleanupJob.compactDatabase])
        XCTAssertEqual(custom.params[TimeBasedCleanupJob.compactThreshold], 0.25)
    }

    func testSyncFileReachesHistorySyncOptions() throws {
        let o = SyncHistoryJob.options(try shipped("sync-history").params, dryRun: false)
        XCTAssertEqual(o.categories, Set(PeerCategory.allCases))
        XCTAssertEqual(o.peerIds, [])
        XCTAssertEqual(o.maxPeers, 100)
        XCTAssertEqual(o.initialMessages, 200)
        XCTAssertEqual(o.pageSize, 100)
        XCTAssertEqual(o.lookback, 30 * 86_400)
        XCTAssertTrue(o.fillHoles)
        XCTAssertEqual(o.concurrency, 4)
        XCTAssertEqual(o.requestRate, 20)
        let groups = try JobFile.parse(yaml: "name: s\nkind: sync-history\nparams:\n  peerCategories: [group]\n  peers: [5]\n", file: "s.yaml")
        let g = SyncHistoryJob.options(groups.params, dryRun: true)
        XCTAssertEqual(g.categories, [.group])
        XCTAssertEqual(g.peerIds, [5])
        XCTAssertTrue(g.dryRun)
    }

    func testRevalidateFileReachesPassOptions() throws {
        let o = RevalidateReferencesJob.options(try shipped("revalidate-references").params, referenceTTL: 3600, dryRun: false)
        XCTAssertEqual(o.window, 2400)
        XCTAssertEqual(o.referenceTTL, 3600)
        XCTAssertEqual(o.parentKinds, Set(MediaParent.Kind.allCases))
        XCTAssertEqual(o.batchSize, 100)
        XCTAssertEqual(o.requestRate, 10)
        XCTAssertEqual(o.concurrency, 4)
        XCTAssertEqual(o.maxParents, 10_000)
        XCTAssertEqual(o.requestTimeout, 30)
        let some = try JobFile.parse(yaml: "name: r\nkind: revalidate-references\nparams:\n  parentKinds: [stickerSet, avatar]\n", file: "r.yaml")
        XCTAssertEqual(RevalidateReferencesJob.options(some.params, referenceTTL: 60, dryRun: false).parentKinds, [.stickerSet, .peerAvatar])
    }

    func testPrefetchFileReachesPolicy() throws {
        let p = PrefetchPolicy(params: try shipped("prefetch-chat-media").params)
        XCTAssertEqual(p.categories, Set(PeerCategory.allCases))
        XCTAssertEqual(p.mediaTypes, Set(MediaContentType.downloadable))
        XCTAssertEqual(p.sizeCaps[.photo], 1 << 20)
        XCTAssertEqual(p.sizeCaps[.video], 10 << 20)
        XCTAssertEqual(p.sizeCaps[.file], 3 << 20)
        XCTAssertEqual(p.sizeCaps[.voice], 1 << 20, "a key the file leaves out keeps its default")
        XCTAssertEqual(p.lookback, 7 * 86_400)
        XCTAssertEqual(p.budget, 512 << 20)
        XCTAssertEqual(p.freeSpaceFloor, 1 << 30)
        XCTAssertEqual(p.cacheLimit, 2 << 30)
        XCTAssertEqual(p.concurrency, 4)
        XCTAssertNil(p.bandwidthLimit)
        XCTAssertEqual(
            PrefetchPolicy(), PrefetchPolicy(params: try JobFile.parse(yaml: "name: p\nkind: prefetch-chat-media\n", file: "p.yaml").params),
            "the policy's defaults are the kind's")
    }

    func testUploadFileReachesItsSettings() throws {
        let p = try shipped("upload-queue").params
        XCTAssertEqual(p[UploadQueueJob.concurrency], 2)
        XCTAssertEqual(p[UploadQueueJob.partsInFlight], 30)
        XCTAssertEqual(p[UploadQueueJob.itemAttempts], 5)
        XCTAssertEqual(p[UploadQueueJob.itemBackoff], .seconds(30))
        XCTAssertEqual(p[UploadQueueJob.leaseDuration], .seconds(300))
        XCTAssertEqual(p[UploadQueueJob.retryWithin], .seconds(60))
        XCTAssertNil(p[UploadQueueJob.maxItems])
        XCTAssertNil(p[UploadQueueJob.bandwidthLimit])
    }
}
