import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// Real child processes (`jobrun-testkit`): a lock held by another process, and SIGKILL during
/// a write, during completion and during cleanup.
final class CrossProcessTests: XCTestCase {
    let now: Int64 = 1_000_000

    override func setUpWithError() throws {
        _ = try Products.builtExecutable("jobrun-testkit")
    }

    func testResourceLockedByAnotherProcessSurvivesCleanup() throws {
        let f = try CacheFixture("xlock")
        for i in 0..<10 { try f.add("r\(i)", size: 100, accessTime: now - 1000 + Int64(i)) }
        let child = try ChildProcess(MediaBoxFixtures.testkit, ["hold-resource-lock", f.media, "r0", "30"])
        defer { child.signal(SIGKILL); child.wait(timeout: 5) }
        XCTAssertTrue(child.waitForOutput("locked", timeout: 30), "child stderr: \(child.stderr)")
        let report = try f.cleanup(CleanupOptions(generalTTL: 1, now: now))
        XCTAssertTrue(f.exists("r0"), "locked by another process")
        XCTAssertEqual((1..<10).filter { f.exists("r\($0)") }, [])
        XCTAssertEqual(report.skippedLocked, 1)
        XCTAssertEqual(report.removed.count, 9)
        child.signal(SIGKILL)
        child.wait(timeout: 5)
        // Once the holder is gone (the kernel drops its lock), the next cleanup removes it.
        _ = try f.cleanup(CleanupOptions(generalTTL: 1, now: now))
        XCTAssertFalse(f.exists("r0"))
        try f.assertTotalsMatchDisk()
    }

    func testSigkillDuringWriteLeavesNoCompleteFileAndResumes() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-killwrite")
        let media = tmp.path + "/media"
        let size: Int64 = 400_000
        let child = try ChildProcess(MediaBoxFixtures.testkit, ["write-partial-slowly", media, "big", "\(size)", "16384", "20"])
        XCTAssertTrue(child.waitForOutput("progress 98304", timeout: 30), child.stderr)
        child.signal(SIGKILL)
        child.wait(timeout: 5)
        let box = try MediaBox(basePath: media, fetcher: PatternFetcher(chunk: 16384))
        let paths = box.paths(for: MediaResourceId("big"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: paths.complete), "no complete file after a killed write")
        let partial = try XCTUnwrap(box.resourceData(MediaResourceId("big")))
        XCTAssertFalse(partial.complete)
        // "progress N" is printed when a part is handed over, 20 ms before the next; earlier parts are on disk.
        XCTAssertGreaterThanOrEqual(partial.size, 65_536)
        let prefix = try Data(contentsOf: URL(fileURLWithPath: paths.partial)).prefix(Int(partial.size))
        XCTAssertEqual(prefix, MediaTestPattern.bytes(id: "big", count: Int(partial.size)), "what the meta claims is right")
        // The kernel released the dead writer's lock: a new fetch resumes and completes.
        let fetcher = PatternFetcher(chunk: 16384)
        let box2 = try MediaBox(basePath: media, fetcher: fetcher)
        let data = try await box2.fetch(SimpleMediaResource("big", size: size), info: MediaResourceStorageInfo())
        XCTAssertEqual(fetcher.requests.first?.missingRanges.first?.lowerBound, partial.size)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "big", count: Int(size)))
    }

    func testSecondProcessWaitsForTheFirstWritersResult() async throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-xfetch")
        let media = tmp.path + "/media"
        let child = try ChildProcess(MediaBoxFixtures.testkit, ["write-partial-slowly", media, "shared", "65536", "8192", "50"])
        defer { child.signal(SIGKILL); child.wait(timeout: 5) }
        XCTAssertTrue(child.waitForOutput("progress 8192", timeout: 30), child.stderr)
        let fetcher = PatternFetcher(chunk: 8192)
        let box = try MediaBox(basePath: media, fetcher: fetcher)
        let data = try await box.fetch(SimpleMediaResource("shared", size: 65536), info: MediaResourceStorageInfo())
        XCTAssertEqual(fetcher.calls, 0, "the other process's download was used")
        XCTAssertTrue(child.waitForOutput("done 65536", timeout: 30))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data.path)), MediaTestPattern.bytes(id: "shared", count: 65536))
    }

    /// Kills a storing child at several moments; every complete file present must have exactly
    /// the right bytes, and reconciliation must make index and disk agree.
    func testSigkillDuringCompletionNeverLeavesAWrongCompleteFile() throws {
        for (round, delayMs) in [3, 11, 29, 53, 97].enumerated() {
            let tmp = TemporaryDirectory(prefix: "mediabox-killcomplete")
            let media = tmp.path + "/media"
            let child = try ChildProcess(MediaBoxFixtures.testkit, ["store-loop", media, "100000", "65536"])
            XCTAssertTrue(child.waitForOutput("stored 0", timeout: 30), child.stderr)
            usleep(useconds_t(delayMs * 1000))
            child.signal(SIGKILL)
            child.wait(timeout: 5)
            let box = try MediaBox(basePath: media)
            var complete = 0
            for name in try MediaShard.storedFileNames(in: media) where name.hasPrefix("r") && !name.contains("_") {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(MediaShard.path(in: media, storedFile: name))))
                XCTAssertEqual(bytes, MediaTestPattern.bytes(id: name, count: 65536), "round \(round): \(name) is whole")
                complete += 1
            }
            XCTAssertGreaterThan(complete, 0)
            let report = try Reconciliation.run(
                mediaBox: box, options: ReconciliationOptions(stalePartialAge: 0, settleTime: 0),
                now: Int64(Date().timeIntervalSince1970) + 5)
            XCTAssertEqual(
                try MediaShard.storedFileNames(in: media).filter { $0.contains("_partial") }, [],
                "round \(round): \(report)")
            let stats = try box.stats()
            XCTAssertEqual(stats.total, StorageUsage(bytes: Int64(complete) * 65536, count: Int64(complete)))
            XCTAssertEqual(MediaBoxFixtures.findByteCount(media), stats.total.bytes)
        }
    }

    func testSigkillDuringCleanupThenReconciliation() throws {
        let f = try CacheFixture("killcleanup")
        let items = (0..<3000).map { (MediaResourceId("c\($0)"), MediaTestPattern.bytes(id: "c\($0)", count: 512)) }
        try f.box.storeBatch(items, info: { _ in MediaResourceStorageInfo(peerId: PeerId(5), contentType: .sticker) }, accessTime: now)
        let child = try ChildProcess(MediaBoxFixtures.testkit, ["cleanup", f.media, "0", "50"])
        // Kill it once it has removed some files but not all.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let n = (try? MediaShard.storedFileNames(in: f.media).count) ?? 0
            if n < 3000 - 200 { break }
            usleep(500)
        }
        child.signal(SIGKILL)
        child.wait(timeout: 5)
        let remaining = MediaBoxFixtures.fileSizes(in: f.media)
        XCTAssertGreaterThan(remaining.count, 0, "killed before it finished")
        XCTAssertLessThan(remaining.count, 3000, "killed after it started")
        for (relative, _) in remaining {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: f.media + "/" + relative))
            let name = String(relative.split(separator: "/").last ?? "")
            XCTAssertEqual(relative, try XCTUnwrap(MediaShard.name(forStoredFile: name)) + "/" + name, "in its shard")
            XCTAssertEqual(bytes, MediaTestPattern.bytes(id: name, count: 512))
        }
        _ = try Reconciliation.run(mediaBox: f.box)
        try f.assertTotalsMatchDisk()
        XCTAssertEqual(try f.box.stats().total.count, Int64(remaining.count))
    }
}
