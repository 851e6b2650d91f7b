import CloudCore
import CloudProtocol
import Foundation
import MediaBox
import TestSupport
import XCTest

/// A ranged prefetch (`videoPrefix`) killed with SIGKILL midway, again and again, against a real
/// `cloudd`: after every kill each partial file's range record decodes and names only bytes equal
/// to the cloud's, every index row has its file, what is held only grows (resumed range by range, never
/// restarted), and a last run completes every prefix.
final class VideoPrefixKillTests: XCTestCase {
    static let kills = 20

    func testKilledRangedPrefetchKeepsConsistentRangeMapsAndResumes() throws {
        let cloud = try startCloudd([
            "--seed", "61", "--dcs", "2", "--peers", "6", "--messages-per-peer", "24", "--cdn-fraction", "0", "--max-media-size", "8MiB",
        ])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.writePrefetchJob("  mediaTypes: [video]\n  videoPrefix: 2MiB\n  concurrency: 2\n  budget: 1GiB\n")
        try h.syncOnce(initialMessages: 24)
        try cloud.setFaults(FaultConfig(bandwidthBytesPerSecond: 128 << 10))  // a 128 KiB part takes 1 s
        try cloud.resetCounters()
        let media = h.root + "/account-0/postbox/media"
        var heldBefore: [String: RangeMap] = [:]
        var killedMidway = 0
        // Bytes this test reads itself from the plain route to compare (counted by the cloud too).
        var readToCompare: Int64 = 0
        for kill in 0..<Self.kills {
            let run = try h.start(["run", "prefetch", "--json"])
            Thread.sleep(forTimeInterval: 0.4 + Double(kill % 5) * 0.15)
            if run.isRunning { killedMidway += 1 }
            run.signal(SIGKILL)
            _ = run.wait(timeout: 30)

            // Every partial file's record decodes and names only bytes that are the cloud's.
            let names = h.partialDataFileNames()
            let partials = h.partials()
            XCTAssertEqual(partials.count, names.count, "kill \(kill): a partial file without a valid record: \(names)")
            for p in partials {
                let data = try XCTUnwrap(FileManager.default.contents(atPath: p.dataPath), p.name)
                let id = try XCTUnwrap(p.fileId, p.name)
                for r in p.ranges {
                    XCTAssertLessThanOrEqual(r.upperBound, Int64(data.count), "kill \(kill): \(p.name) claims unwritten bytes")
                    XCTAssertEqual(data.subdata(in: Int(r.lowerBound)..<Int(r.upperBound)), try cloud.plainBytes(id, r), "kill \(kill): \(p.name) \(r)")
                    readToCompare += Int64(r.count)
                }
                // Resumed, never restarted: what was held before is still held.
                if let before = heldBefore[p.name] {
                    for r in before.ranges { XCTAssertTrue(RangeMap(p.ranges).contains(r), "kill \(kill): \(p.name) lost \(r)") }
                }
                heldBefore[p.name] = RangeMap(p.ranges)
            }
            // Every index row has its file (complete, or the partial it stands for).
            let box = try MediaBox(basePath: media, readOnly: true)
            for e in try box.storageBox.entries(after: nil, limit: 100_000) {
                XCTAssertNotNil(box.heldRanges(MediaResourceId(e.resourceId)), "kill \(kill): row without a file: \(e.resourceId)")
            }
        }
        XCTAssertGreaterThanOrEqual(killedMidway, Self.kills - 2, "the runs were killed while fetching")

        // The last run finishes: every prefix held, bytes equal, and parts fetched again only
        // for those a kill cut off in flight.
        let last = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(last.status, 0, last.stdout + last.stderr)
        let c = JobrunHarness.counters(last.stdout)
        XCTAssertEqual(c["failed"], 0, last.stdout)
        XCTAssertEqual((c["downloaded"] ?? 0) + (c["already_cached"] ?? 0), c["selected"], last.stdout)
        XCTAssertGreaterThan(c["video_prefixes"] ?? 0, 0, "prefixes remained for the last run: \(last.stdout)")
        let box = try MediaBox(basePath: media, readOnly: true)
        var held: Int64 = 0
        for e in try box.storageBox.entries(after: nil, limit: 100_000) where e.info.contentType == .video {
            let ranges = try XCTUnwrap(box.heldRanges(MediaResourceId(e.resourceId)))
            let size = try XCTUnwrap(ranges.size)
            XCTAssertTrue(ranges.ranges.contains(0..<min(size, 2 << 20)), "\(e.resourceId): \(ranges.ranges)")
            held += ranges.ranges.totalBytes
        }
        let served = try cloud.counters().fileBytes.values.reduce(0, +) - readToCompare
        XCTAssertGreaterThanOrEqual(served, held)
        // At most the parts in flight at each kill (2 files × the parts a file may have in flight
        // × 128 KiB) again.
        let inFlightPerKill = Int64(2 * MultipartFetchConfiguration(datacenters: [:]).maxPartsPerFile * (128 << 10))
        XCTAssertLessThanOrEqual(served, held + Int64(Self.kills) * inFlightPerKill, "resumed, not restarted")
    }
}
