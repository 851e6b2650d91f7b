import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// `prefetch-chat-media` and `time-based-cleanup` under one `jobrun schedule` process, over one
/// MediaBox: cleanup runs while prefetch is downloading, the cache never grows past prefetch's
/// limit by more than the one file in flight, and nothing being downloaded is removed.
final class PrefetchCleanupScheduleTests: XCTestCase {
    static let cacheLimit: Int64 = 8 << 20
    static let largestFile: Int64 = 3 << 20

    func testPrefetchAndCleanupShareOneMediaBoxUnderTheScheduler() throws {
        // Parts are served at 96 KB/s each, so filling 8 MiB takes prefetch about 20 s.
        let cloud = try startCloudd([
            "--seed", "41", "--dcs", "2", "--peers", "5", "--messages-per-peer", "16",
            "--max-media-size", "3MiB", "--cdn-fraction", "0", "--bandwidth", "96K",
        ])
        let h = JobrunHarness()
        let account = h.account
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 16)
        try FileManager.default.removeItem(atPath: h.jobsDir + "/sync.yaml")  // the scheduler runs only the two below

        // Every minute both: prefetch fills up to its cache limit; cleanup (with a lower limit,
        // so it has work to do while prefetch runs) evicts the least recently used.
        try h.writeJob(
            "prefetch",
            """
            name: prefetch
            kind: prefetch-chat-media
            schedule: "* * * * *"
            timeout: 5m
            params:
              concurrency: 1
              budget: 1GiB
              freeSpaceFloor: 0
              cacheLimit: 8MiB
              sizeCaps:
                photo: 3MiB
                video: 3MiB
                file: 3MiB
            """)
        try h.writeJob(
            "cleanup",
            """
            name: cleanup
            kind: time-based-cleanup
            schedule: "* * * * *"
            timeout: 1m
            params:
              maxSize: 1MiB
              immunity: 0s
            """)

        // Start at second 45, so the next minute's cleanup fires while the first prefetch runs.
        let second = Calendar(identifier: .gregorian).component(.second, from: Date())
        Thread.sleep(forTimeInterval: Double((45 - second + 60) % 60))
        let scheduler = try h.start(["schedule", "--now"])
        let sampler = CacheSampler(mediaDirectory: account + "/postbox/media")
        let deadline = Date().addingTimeInterval(150)
        var finished: [[String: Any]] = []
        var tick = 0
        repeat {
            sampler.sample()
            usleep(50_000)
            tick += 1
            if tick % 10 == 0 { finished = h.logEvents().filter { $0["event"] as? String == "run.finished" } }
        } while Date() < deadline
            && !(finished.contains { $0["job"] as? String == "prefetch" }
                && finished.filter { $0["job"] as? String == "cleanup" }.count >= 2)
        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(timeout: 60), 0, scheduler.stderr)

        let events = h.logEvents()
        func runs(_ job: String, _ event: String) -> [[String: Any]] {
            events.filter { $0["job"] as? String == job && $0["event"] as? String == event }
        }
        func int(_ e: [String: Any]?, _ key: String) -> Int64 { (e?[key] as? NSNumber)?.int64Value ?? -1 }
        let prefetch = try XCTUnwrap(runs("prefetch", "run.finished").first, "prefetch finished")
        let prefetchStart = try XCTUnwrap(runs("prefetch", "run.started").first?["ts"] as? String)
        let prefetchEnd = try XCTUnwrap(prefetch["ts"] as? String)
        XCTAssertEqual(prefetch["outcome"] as? String, "succeeded", "\(prefetch)")
        XCTAssertEqual(int(prefetch, "failed"), 0, "a download lost to cleanup would fail")
        XCTAssertGreaterThan(int(prefetch, "downloaded"), 3)

        // A cleanup ran in the middle of the prefetch and evicted files while it downloaded.
        let cleanups = runs("cleanup", "run.finished")
        XCTAssertGreaterThanOrEqual(cleanups.count, 2)
        let during = cleanups.filter { ($0["ts"] as? String ?? "") > prefetchStart && ($0["ts"] as? String ?? "") < prefetchEnd }
        XCTAssertFalse(during.isEmpty, "a cleanup finished while prefetch was running (prefetch \(prefetchStart)…\(prefetchEnd))")
        XCTAssertTrue(cleanups.allSatisfy { $0["outcome"] as? String == "succeeded" }, "\(cleanups)")
        XCTAssertGreaterThan(cleanups.map { int($0, "files_evicted") }.reduce(0, +), 0, "cleanup had work to do")

        print(
            "schedule: prefetch downloaded \(int(prefetch, "downloaded")) files (\(int(prefetch, "bytes")) bytes), skipped \(int(prefetch, "skipped_cache_limit")) at the cache limit; "
                + "cleanups evicted \(cleanups.map { int($0, "files_evicted") }); cache peak \(sampler.peakBytes) bytes over \(sampler.samples) samples")
        // The cache (complete and partial files) never grew past prefetch's limit by more than one file.
        XCTAssertGreaterThan(sampler.samples, 20)
        XCTAssertLessThanOrEqual(
            sampler.peakBytes, Self.cacheLimit + Self.largestFile,
            "peak \(sampler.peakBytes) bytes over \(sampler.samples) samples")

        // Nothing indexed is missing, and what is left is intact and within cleanup's limit's reach.
        let box = try MediaBox(basePath: account + "/postbox/media", readOnly: true)
        let entries = try box.storageBox.entries(after: nil, limit: 100_000)
        XCTAssertFalse(entries.isEmpty)
        for entry in entries {
            let path = box.paths(for: entry.key).complete
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? -1
            XCTAssertEqual(size, entry.size, "indexed file \(entry.key) is on disk with its size")
        }
        try h.assertIntact(entries.map { ($0, box.paths(for: $0.key).complete) }, cloud: cloud)
        XCTAssertLessThanOrEqual(entries.map(\.size).reduce(0, +), Self.cacheLimit)
    }
}

/// Samples the bytes of every media file (complete and partial) under a MediaBox directory.
private final class CacheSampler {
    let mediaDirectory: String
    private(set) var peakBytes: Int64 = 0
    private(set) var samples = 0

    init(mediaDirectory: String) { self.mediaDirectory = mediaDirectory }

    func sample() {
        var total: Int64 = 0
        let enumerator = FileManager.default.enumerator(atPath: mediaDirectory)
        while let path = enumerator?.nextObject() as? String {
            guard !path.hasPrefix("storage") else { continue }
            let attributes = try? FileManager.default.attributesOfItem(atPath: mediaDirectory + "/" + path)
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { continue }
            total += (attributes?[.size] as? Int64) ?? 0
        }
        peakBytes = max(peakBytes, total)
        samples += 1
    }
}
