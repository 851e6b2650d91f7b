import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// `jobrun run prefetch` as an operator runs it, after `sync-history`, against a real `cloudd`:
/// files intact (SHA-256 against the server's), StorageBox records, budget and caps obeyed,
/// idempotent reruns, logs and metrics, exit codes; and a hostile cloud (CDN redirects, 5 %
/// faults, every reference expired before the run).
final class PrefetchChatMediaIntegrationTests: XCTestCase {
    /// A cloudd child, a root configured for it, a synced Postbox, and a `prefetch` job.
    func start(_ arguments: [String], prefetchParams: String) throws -> (ClouddProcess, JobrunHarness) {
        let cloud = try startCloudd(["--dcs", "2", "--peers", "5", "--messages-per-peer", "12"] + arguments)
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.writePrefetchJob(prefetchParams)
        try h.syncOnce(initialMessages: 12)
        return (cloud, h)
    }

    func testPrefetchEndToEndBudgetCapsIntegrityAndRerun() throws {
        let (cloud, h) = try start(
            ["--seed", "21", "--cdn-fraction", "0"],
            prefetchParams: """
                  budget: 3MiB
                  sizeCaps:
                    video: 2MiB
                  concurrency: 3
                """)
        // Run 1: a 3 MiB budget leaves files for later.
        let first = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let c1 = JobrunHarness.counters(first.stdout)
        XCTAssertGreaterThan(c1["downloaded"] ?? 0, 0, first.stdout)
        XCTAssertLessThanOrEqual(c1["bytes"] ?? .max, 3 << 20, "budget obeyed")
        XCTAssertGreaterThan(c1["skipped_budget"] ?? 0, 0, "the budget decided: \(first.stdout)")
        XCTAssertGreaterThan(c1["skipped_size_cap"] ?? 0, 0, "the caps decided: \(first.stdout)")
        XCTAssertEqual(c1["failed"], 0)

        // Run 2 with a large budget fetches the rest; run 3 fetches nothing.
        try h.writePrefetchJob(
            """
              budget: 1GiB
              sizeCaps:
                video: 2MiB
              concurrency: 3
            """)
        let second = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(second.status, 0, second.stderr)
        let c2 = JobrunHarness.counters(second.stdout)
        XCTAssertEqual(c2["already_cached"], c1["downloaded"])
        XCTAssertEqual(c2["skipped_budget"], 0)
        let third = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(third.status, 0, third.stderr)
        let c3 = JobrunHarness.counters(third.stdout)
        XCTAssertEqual(c3["downloaded"], 0, "a rerun downloads nothing new")
        XCTAssertEqual(c3["already_cached"], c3["selected"])
        XCTAssertEqual(c3["selected"], (c2["downloaded"] ?? 0) + (c2["already_cached"] ?? 0))

        // Every file: intact, recorded with peer, message and content type, within its cap.
        let entries = try h.prefetchedEntries()
        XCTAssertEqual(entries.count, c3["selected"])
        try h.assertIntact(entries, cloud: cloud)
        let caps: [MediaContentType: Int64] = [.photo: 1 << 20, .video: 2 << 20, .file: 3 << 20, .voice: 1 << 20, .sticker: 1 << 20, .avatar: 1 << 20]
        for (entry, _) in entries {
            XCTAssertNotEqual(entry.info.peerId.rawValue, 0, entry.resourceId)
            XCTAssertNotEqual(entry.info.contentType, .other, entry.resourceId)
            XCTAssertNotNil(entry.info.peerClass, entry.resourceId)
            XCTAssertLessThanOrEqual(entry.size, caps[entry.info.contentType] ?? .max, entry.resourceId)
            if entry.info.contentType != .avatar { XCTAssertNotNil(entry.info.messageId, entry.resourceId) }
        }

        // Logs and metrics.
        let finished = h.logEvents().filter { $0["event"] as? String == "run.finished" && $0["job"] as? String == "prefetch" }
        XCTAssertEqual(finished.count, 3)
        XCTAssertEqual((finished.last?["downloaded"] as? NSNumber)?.intValue, 0)
        XCTAssertEqual(h.logEvents().filter { $0["event"] as? String == "prefetch.report" }.count, 3)
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_prefetch.prom", encoding: .utf8)
        XCTAssertTrue(
            metrics.contains("jobrun_prefetch_chat_media_already_cached{jobrun_job=\"prefetch\",kind=\"prefetch-chat-media\"} \(c3["already_cached"] ?? -1)"),
            metrics)
        XCTAssertTrue(metrics.contains("jobrun_last_run_outcome{jobrun_job=\"prefetch\",kind=\"prefetch-chat-media\",outcome=\"succeeded\"} 1"), metrics)

        // The cloud goes away with files left to fetch: exit 69.
        try FileManager.default.removeItem(atPath: h.root + "/account-0/postbox/media")
        cloud.stop()
        let down = try h.run(["run", "prefetch"])
        XCTAssertEqual(down.status, 69, down.stdout + down.stderr)
    }

    /// CDN redirects, 5 % of calls failing and every reference expired before the run: every
    /// selected file arrives intact. Needs the account fetcher's revalidation.
    func testPrefetchThroughCdnFaultsAndExpiredReferences() throws {
        let (cloud, h) = try start(
            ["--seed", "22", "--cdn-fraction", "0.5", "--error-rate", "0.05", "--drop-rate", "0.02"],
            prefetchParams: "  concurrency: 4\n  bandwidthLimit: 64MiB\n")
        try cloud.expireReferences()
        let run = try h.run(["run", "prefetch", "--json"])
        let c = JobrunHarness.counters(run.stdout)
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertEqual(c["failed"], 0, run.stdout)
        XCTAssertEqual(c["downloaded"], c["selected"], run.stdout)
        let entries = try h.prefetchedEntries()
        XCTAssertEqual(entries.count, c["selected"])
        try h.assertIntact(entries, cloud: cloud)
        XCTAssertGreaterThan(try cloud.counters().methods["upload.getCdnFile"] ?? 0, 0, "some files came through the CDN")
    }

    /// Revalidation that always fails: files fail one by one, the run goes on, says so and
    /// exits 1; logs name resource ids, never a file reference.
    func testFailedFilesAreCountedAndExitOne() throws {
        let (cloud, h) = try start(["--seed", "23", "--cdn-fraction", "0", "--fail-revalidation"], prefetchParams: "  concurrency: 2\n")
        try cloud.expireReferences()
        let run = try h.run(["run", "prefetch"])
        XCTAssertEqual(run.status, 1, run.stdout + run.stderr)
        let failed = h.logEvents().filter { $0["event"] as? String == "prefetch.failed" }
        XCTAssertGreaterThan(failed.count, 1, "every file was tried")
        XCTAssertTrue(failed.allSatisfy { ($0["resource"] as? String)?.isEmpty == false })
        let report = try XCTUnwrap(h.logEvents().last { $0["event"] as? String == "prefetch.report" })
        XCTAssertEqual((report["failed"] as? NSNumber)?.intValue, failed.count)
        XCTAssertTrue(run.stderr.contains("files failed"), run.stderr)
        // A failed run's counters still reach the metrics, next to its outcome.
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_prefetch.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_prefetch_chat_media_failed{jobrun_job=\"prefetch\",kind=\"prefetch-chat-media\"} \(failed.count)"), metrics)
        XCTAssertTrue(metrics.contains("jobrun_last_run_outcome{jobrun_job=\"prefetch\",kind=\"prefetch-chat-media\",outcome=\"failed\"} 1"), metrics)
    }
}

extension JobrunHarness {
    /// A `prefetch-chat-media` job named `prefetch` with the given `params` lines.
    func writePrefetchJob(_ params: String) throws {
        try writeJob(
            "prefetch",
            """
            name: prefetch
            kind: prefetch-chat-media
            schedule: "*/15 * * * *"
            timeout: 5m
            retry:
              backoffLimit: 0
            params:
              freeSpaceFloor: 0
            \(params)
            """)
    }

    /// Every StorageBox entry of account 0 with the path of its complete file.
    func prefetchedEntries() throws -> [(StorageBoxEntry, String)] {
        let box = try MediaBox(basePath: root + "/account-0/postbox/media", readOnly: true)
        return try box.storageBox.entries(after: nil, limit: 100_000).map { ($0, box.paths(for: $0.key).complete) }
    }

    /// Each file's SHA-256 is that of a server file of the same size (decrypted for secret files).
    func assertIntact(_ entries: [(StorageBoxEntry, String)], cloud: ClouddProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        let sizes = Set(entries.map(\.0.size))
        var hashes: Set<String> = []
        for summary in try cloud.dataset().files where sizes.contains(summary.size) || summary.type == .secret {  // secret: container size
            let info = try cloud.fileInfo(summary.id)
            hashes.insert(info.plaintextSHA256 ?? info.sha256)
        }
        for (entry, path) in entries {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(Int64(data.count), entry.size, entry.resourceId, file: file, line: line)
            XCTAssertTrue(hashes.contains(SHA256.hash(data).hexString), "\(entry.resourceId) is not byte-equal to the server's file", file: file, line: line)
        }
    }
}
