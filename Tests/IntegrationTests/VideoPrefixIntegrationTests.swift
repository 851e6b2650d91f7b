import CloudProtocol
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// `prefetch-chat-media` with `videoPrefix` against a real `cloudd`: each streamable video's
/// header and first bytes, byte-equal to the cloud's at every offset; the partial files are
/// cache entries that a larger prefix continues and `time-based-cleanup` evicts.
final class VideoPrefixIntegrationTests: XCTestCase {
    static let prefix: Int64 = 256 << 10

    /// The cloud file id in a document resource id (`telegram-cloud-document-<dc>-<id>`).
    static func fileId(_ resourceId: String) -> Int64? {
        guard resourceId.hasPrefix("telegram-cloud-document-") else { return nil }
        return resourceId.split(separator: "-").last.flatMap { Int64($0) }
    }

    /// The video entries of account 0, with what each holds.
    func videoEntries(_ h: JobrunHarness) throws -> [(entry: StorageBoxEntry, held: RangeMap, size: Int64?, path: String)] {
        let box = try MediaBox(basePath: h.root + "/account-0/postbox/media", readOnly: true)
        return try box.storageBox.entries(after: nil, limit: 100_000).filter { $0.info.contentType == .video }.map { e in
            let held = try XCTUnwrap(box.heldRanges(MediaResourceId(e.resourceId)), e.resourceId)
            return (e, held.ranges, held.size, box.resourceData(MediaResourceId(e.resourceId))!.path)
        }
    }

    /// Every held byte of every video equals the cloud's byte at that offset.
    func assertHeldBytesMatch(_ entries: [(entry: StorageBoxEntry, held: RangeMap, size: Int64?, path: String)], cloud: ClouddProcess) throws {
        for (entry, held, _, path) in entries {
            let id = try XCTUnwrap(Self.fileId(entry.resourceId))
            let local = try Data(contentsOf: URL(fileURLWithPath: path))
            for r in held.ranges {
                XCTAssertEqual(local.subdata(in: Int(r.lowerBound)..<Int(r.upperBound)), try cloud.plainBytes(id, r), "\(entry.resourceId) \(r)")
            }
        }
    }

    /// A cloudd (stopped by the caller) and an account whose first prefetch run took 256 KiB
    /// prefixes of its videos.
    func prefetchPrefixes(
        seed: Int, peers: Int
    ) throws -> (cloud: ClouddProcess, h: JobrunHarness, first: (status: Int32, stdout: String, stderr: String)) {
        let cloud = try startCloudd(["--seed", "\(seed)", "--dcs", "2", "--peers", "\(peers)", "--messages-per-peer", "16", "--cdn-fraction", "0"])
        do {
            let h = JobrunHarness()
            try h.configureAccount(for: cloud)
            try h.syncOnce(initialMessages: 16)
            try h.writePrefetchJob("  mediaTypes: [video]\n  videoPrefix: 256KiB\n  budget: 1GiB\n")
            let first = try h.run(["run", "prefetch", "--json"])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            return (cloud, h, first)
        } catch {
            cloud.stop()
            throw error
        }
    }

    func testHeaderFirstPrefixesAreCacheEntriesThatGrowAndGetEvicted() throws {
        let (cloud, h, first) = try prefetchPrefixes(seed: 31, peers: 6)
        defer { cloud.stop() }
        let c1 = JobrunHarness.counters(first.stdout)
        let prefixes = try XCTUnwrap(c1["video_prefixes"])
        XCTAssertGreaterThan(prefixes, 1, first.stdout)

        var entries = try videoEntries(h)
        let partials = entries.filter { e in e.size.map { !e.held.contains(0..<$0) } ?? true }
        XCTAssertEqual(partials.count, prefixes, "every prefix is a cache entry")
        for p in partials {
            XCTAssertEqual(p.held.ranges.count, 1, "one range from the start: \(p.held)")
            XCTAssertEqual(p.held.contiguousPrefix, max(Self.prefix, p.held.contiguousPrefix), "at least the prefix")
            XCTAssertLessThan(p.held.contiguousPrefix, Self.prefix + (128 << 10), "no more than the prefix in whole parts")
            XCTAssertEqual(p.entry.size, p.held.totalBytes, "counted with the bytes it holds")
        }
        try assertHeldBytesMatch(entries, cloud: cloud)
        let stats = try h.run(["stats", "--json"])
        XCTAssertEqual(stats.status, 0, stats.stderr)
        let statsJSON = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        let account = try XCTUnwrap((statsJSON["accounts"] as? [[String: Any]])?.first)
        let shown = try XCTUnwrap(account["partial_prefixes"] as? [String: Any])
        XCTAssertEqual((shown["files"] as? NSNumber)?.intValue, prefixes, stats.stdout)
        XCTAssertEqual((shown["bytes"] as? NSNumber)?.int64Value, partials.reduce(0) { $0 + $1.held.totalBytes })
        XCTAssertTrue(try h.run(["stats"]).stdout.contains("partial prefixes:"))

        // A rerun holds everything it wants: nothing is fetched.
        let again = JobrunHarness.counters(try h.run(["run", "prefetch", "--json"]).stdout)
        XCTAssertEqual(again["downloaded"], 0)
        XCTAssertEqual(again["already_cached"], c1["selected"])

        // A larger prefix continues each partial from where it stopped: no part fetched twice.
        try cloud.resetCounters()
        try h.writePrefetchJob("  mediaTypes: [video]\n  videoPrefix: 1MiB\n  budget: 1GiB\n")
        let grown = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(grown.status, 0, grown.stdout + grown.stderr)
        for p in partials {
            let id = try XCTUnwrap(Self.fileId(p.entry.resourceId))
            let counters = try cloud.filePartCounters(id)
            XCTAssertTrue(counters.offsets.keys.allSatisfy { Int64($0)! >= p.held.contiguousPrefix }, "\(p.entry.resourceId): \(counters.offsets)")
            XCTAssertTrue(counters.offsets.values.allSatisfy { $0 == 1 })
        }
        entries = try videoEntries(h)
        try assertHeldBytesMatch(entries, cloud: cloud)
        XCTAssertTrue(entries.allSatisfy { e in e.held.contains(0..<min(1 << 20, e.size ?? 0)) })

        // time-based-cleanup evicts prefixes like any entry: files and rows go.
        try h.writeJob(
            "cleanup",
            """
            name: cleanup
            kind: time-based-cleanup
            schedule: "0 * * * *"
            timeout: 1m
            params:
              maxSize: 0
              immunity: 0s
            """)
        let cleanup = try h.run(["run", "cleanup", "--json"])
        XCTAssertEqual(cleanup.status, 0, cleanup.stdout + cleanup.stderr)
        XCTAssertTrue(try videoEntries(h).isEmpty)
        for e in entries {
            XCTAssertFalse(FileManager.default.fileExists(atPath: e.path), "\(e.path) was removed, its range record with it")
        }
        XCTAssertEqual(h.partialFileNames(), [], "nothing of a partial download is left")
    }

    /// The cloud revises the headers of prefetched videos: a larger prefix then fetches each
    /// header again (once) and replaces it, fetches only the missing bytes after the prefix, and
    /// every byte held equals the cloud's current file.
    func testRevisedHeadersAreReplacedWhenAPrefixGrows() throws {
        let (cloud, h, first) = try prefetchPrefixes(seed: 37, peers: 4)
        defer { cloud.stop() }
        let partials = try videoEntries(h).filter { e in e.size.map { !e.held.contains(0..<$0) } ?? true }
        XCTAssertGreaterThan(partials.count, 1, first.stdout)
        for p in partials {
            let revised = try cloud.reviseHeader(try XCTUnwrap(Self.fileId(p.entry.resourceId)))
            XCTAssertEqual(revised.revision, 1)
        }

        try cloud.resetCounters()
        try h.writePrefetchJob("  mediaTypes: [video]\n  videoPrefix: 1MiB\n  budget: 1GiB\n")
        let grown = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(grown.status, 0, grown.stdout + grown.stderr)
        let box = try MediaBox(basePath: h.root + "/account-0/postbox/media", readOnly: true)
        for p in partials {
            let id = try XCTUnwrap(Self.fileId(p.entry.resourceId))
            let counters = try cloud.filePartCounters(id)
            XCTAssertEqual(counters.offsets["0"], 1, "\(p.entry.resourceId): the revised header fetched again, once")
            XCTAssertTrue(
                counters.offsets.keys.allSatisfy { $0 == "0" || Int64($0)! >= p.held.contiguousPrefix },
                "\(p.entry.resourceId): only the header and the missing ranges: \(counters.offsets)")
            XCTAssertTrue(counters.offsets.values.allSatisfy { $0 == 1 }, "\(counters.offsets)")
            if let record = MediaBoxPartialFile.record(of: box.paths(for: MediaResourceId(p.entry.resourceId)), in: box.directory) {
                XCTAssertEqual(record.headerRevision, 1, p.entry.resourceId)
            }
        }
        let ids = Set(partials.map(\.entry.resourceId))
        let now = try videoEntries(h).filter { ids.contains($0.entry.resourceId) }
        XCTAssertEqual(now.count, partials.count)
        try assertHeldBytesMatch(now, cloud: cloud)
    }
}
