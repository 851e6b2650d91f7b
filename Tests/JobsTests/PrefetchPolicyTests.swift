import Foundation
import Jobs
import MediaBox
import Postbox
import TestSupport
import XCTest

/// Prefetch's parameters as a policy, and the run-time admission rules (budget, free-space
/// floor, cache limit) over the candidates of `PrefetchDataset`.
final class PrefetchPolicyTests: XCTestCase {
    func testShippedJobFileAndDefaults() throws {
        let shipped = JobCatalog.load(files: [TestPaths.repositoryRoot.appendingPathComponent("jobs/prefetch-chat-media.yaml").path])
        XCTAssertEqual(shipped.errors.map(\.description), [])
        let policy = PrefetchPolicy(params: try XCTUnwrap(shipped.jobs.first).params)
        XCTAssertEqual(policy.categories, Set(PeerCategory.allCases))
        XCTAssertEqual(policy.mediaTypes, [.photo, .video, .file, .voice, .sticker, .avatar])
        XCTAssertEqual(policy.sizeCaps, PrefetchPolicy.defaultSizeCaps)
        XCTAssertEqual(policy.lookback, 7 * 86_400)
        XCTAssertEqual(policy.budget, 512 << 20)
        XCTAssertEqual(policy.freeSpaceFloor, 1 << 30)
        XCTAssertEqual(policy.cacheLimit, 2 << 30)
        XCTAssertEqual(policy.concurrency, 4)

        let dir = try TestPaths.makeTempDirectory()
        let file = dir.appendingPathComponent("p.yaml").path
        try """
        name: p
        kind: prefetch-chat-media
        schedule: "@hourly"
        params:
          peerCategories: [channels, private]
          mediaTypes: [video, avatar]
          sizeCaps:
            video: 20MiB
          lookback: 2d
          budget: 64MiB
          freeSpaceFloor: 0
          concurrency: 2
          bandwidthLimit: 1MiB
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let custom = JobCatalog.load(files: [file])
        XCTAssertEqual(custom.errors.map(\.description), [])
        let p = PrefetchPolicy(params: try XCTUnwrap(custom.jobs.first).params)
        XCTAssertEqual(p.categories, [.channel, .privateChat, .secretChat])
        XCTAssertEqual(p.mediaTypes, [.video, .avatar])
        XCTAssertEqual(p.sizeCaps[.video], 20 << 20)
        XCTAssertEqual(p.sizeCaps[.photo], 1 << 20, "keys not given keep their default")
        XCTAssertEqual(p.sizeCaps[.file], 3 << 20)
        XCTAssertEqual(p.lookback, 2 * 86_400)
        XCTAssertEqual(p.budget, 64 << 20)
        XCTAssertEqual(p.freeSpaceFloor, 0)
        XCTAssertNil(p.cacheLimit)
        XCTAssertEqual(p.concurrency, 2)
        XCTAssertEqual(p.bandwidthLimit, 1 << 20)
    }

    /// Walks the default selection in order through a budget; `complete` says whether a started
    /// file finishes before the next is considered. Returns the names started.
    private func admitted(
        _ d: PrefetchDataset, _ policy: PrefetchPolicy, complete: Bool,
        cacheTotal: Int64 = 0, freeSpace: Int64? = nil
    ) throws -> (started: [String], skipped: [PrefetchBudget.Decision]) {
        let s = try d.select(PrefetchPolicy())
        let names = Dictionary(uniqueKeysWithValues: d.ids.map { ($0.value, $0.key) })
        var budget = PrefetchBudget(policy: policy)
        var total = cacheTotal
        var started: [String] = [], skipped: [PrefetchBudget.Decision] = []
        for c in s.candidates {
            let decision = budget.admit(size: c.size, needed: c.size, cacheTotal: total, freeSpace: freeSpace)
            guard decision == .start else { skipped.append(decision); continue }
            started.append(names[c.resourceId]!)
            if complete {
                budget.finish(size: c.size, needed: c.size, completed: true)
                total += c.size
            }
        }
        return (started, skipped)
    }

    func testBudgetSkipsWhatDoesNotFitAndKeepsGoing() throws {
        let d = try PrefetchDataset()
        let r = try admitted(d, PrefetchPolicy(budget: 3 << 20), complete: true)
        XCTAssertFalse(r.started.contains("video.contact"), "5 MiB does not fit in what is left of 3 MiB")
        XCTAssertTrue(r.started.contains("file.group"), "a smaller, older file still fits")
        XCTAssertEqual(r.skipped, [.budget])
        XCTAssertEqual(r.started.count, 9)

        // A failed file gives its share back.
        var b = PrefetchBudget(policy: PrefetchPolicy(budget: 100))
        XCTAssertEqual(b.admit(size: 80, needed: 80, cacheTotal: 0, freeSpace: nil), .start)
        XCTAssertEqual(b.admit(size: 30, needed: 30, cacheTotal: 0, freeSpace: nil), .budget)
        b.finish(size: 80, needed: 80, completed: false)
        XCTAssertEqual(b.admit(size: 30, needed: 30, cacheTotal: 0, freeSpace: nil), .start)
        // A resumed file costs only its missing part.
        XCTAssertEqual(b.admit(size: 500, needed: 70, cacheTotal: 0, freeSpace: nil), .start)
        XCTAssertTrue(b.exhausted)
    }

    func testFreeSpaceFloorCountsFilesInFlight() throws {
        let d = try PrefetchDataset()
        let floor: Int64 = 1 << 30
        let r = try admitted(d, PrefetchPolicy(freeSpaceFloor: floor), complete: false, freeSpace: floor + 700_000)
        XCTAssertEqual(r.started, ["photo.channel.1", "avatar.channel.small", "sticker.user", "avatar.contact.small", "secret.audio"])
        XCTAssertEqual(r.skipped, Array(repeating: .freeSpace, count: 5))
        // Unknown free space: the floor is not applied.
        XCTAssertEqual(try admitted(d, PrefetchPolicy(freeSpaceFloor: floor), complete: false, freeSpace: nil).skipped, [])
    }

    func testCacheLimitCountsTheCacheAndFilesInFlight() throws {
        let d = try PrefetchDataset()
        let limit: Int64 = 10 << 20
        let r = try admitted(d, PrefetchPolicy(cacheLimit: limit), complete: true, cacheTotal: limit - (1 << 20))
        XCTAssertEqual(r.skipped, [.cacheLimit, .cacheLimit, .cacheLimit])
        XCTAssertEqual(
            Set(r.started),
            [
                "photo.channel.1", "avatar.channel.small", "avatar.channel.big", "sticker.user", "photo.contact.1",
                "avatar.contact.small", "secret.audio",
            ])
        // In flight counts too: two files that each fit alone do not fit together.
        var b = PrefetchBudget(policy: PrefetchPolicy(cacheLimit: 1000))
        XCTAssertEqual(b.admit(size: 600, needed: 600, cacheTotal: 0, freeSpace: nil), .start)
        XCTAssertEqual(b.admit(size: 600, needed: 600, cacheTotal: 0, freeSpace: nil), .cacheLimit)
    }
}
