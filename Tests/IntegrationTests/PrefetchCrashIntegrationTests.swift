import CloudProtocol
import ConfinedFiles
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// `jobrun run prefetch` killed (SIGKILL mid-file), cancelled by its timeout, and watched
/// (`prefetch.progress` events), against a real `cloudd` whose per-response bandwidth cap makes
/// each file take about a second: the store stays consistent, the next run resumes the partial
/// files without fetching a part twice, and the progress events add up to the run's counters.
final class PrefetchCrashIntegrationTests: XCTestCase {
    /// Videos and files up to 3 MiB: several 128 KiB parts each.
    static let params = """
          mediaTypes: [video, file]
          sizeCaps:
            video: 3MiB
            file: 3MiB
          concurrency: 2
        """

    /// A cloudd child, a root configured for it, a synced Postbox, and a `prefetch` job with
    /// `timeout`; the bandwidth cap (bytes/s per part answer) is set after the sync.
    func start(seed: Int, bandwidth: Int64, params: String = params, timeout: String = "5m") throws -> (ClouddProcess, JobrunHarness) {
        let cloud = try startCloudd([
            "--dcs", "2", "--peers", "5", "--messages-per-peer", "12", "--seed", "\(seed)",
            "--cdn-fraction", "0", "--max-media-size", "3MiB",
        ])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.writePrefetchJob(params, timeout: timeout)
        try h.syncOnce(initialMessages: 12)
        try cloud.setFaults(FaultConfig(bandwidthBytesPerSecond: bandwidth))
        return (cloud, h)
    }

    // MARK: 1. SIGKILL mid-file, then resume

    func testSigkillMidFileThenTheNextRunResumesWithoutRefetchingParts() throws {
        let (cloud, h) = try start(seed: 31, bandwidth: 256 << 10)  // a 128 KiB part takes 0.5 s
        let run = try h.start(["run", "prefetch", "--json"])
        // Wait until a file is partly on disk (at least two parts recorded in its meta), then kill.
        let deadline = Date().addingTimeInterval(90)
        var seen: [PartialState] = []
        while Date() < deadline, run.process.isRunning {
            seen = h.partials().filter { $0.fileId != nil && $0.present >= 256 << 10 && !$0.isComplete }
            if !seen.isEmpty { break }
            usleep(20_000)
        }
        XCTAssertTrue(run.process.isRunning, "the run ended before any file was half done: \(run.stdout) \(run.stderr)")
        XCTAssertFalse(seen.isEmpty, "no partial file appeared")
        run.signal(SIGKILL)
        run.wait()
        XCTAssertEqual(run.process.terminationReason, .uncaughtSignal)
        XCTAssertEqual(run.process.terminationStatus, SIGKILL)

        // What the crash left: partial files (the meta names only written data), and a
        // consistent StorageBox: every entry's complete file exists and is intact.
        let atKill = h.partials().filter { $0.fileId != nil && $0.present > 0 && !$0.isComplete }
        XCTAssertFalse(atKill.isEmpty, "a partial download is on disk after the kill")
        for p in atKill {
            let data = try XCTUnwrap(FileManager.default.contents(atPath: p.dataPath), p.name)
            XCTAssertGreaterThanOrEqual(Int64(data.count), p.ranges.map(\.upperBound).max() ?? 0, "the meta claims only written data: \(p.name)")
        }
        let killedEntries = try h.prefetchedEntries()
        let completeAtKill = h.completeFileNames()
        for (entry, path) in killedEntries {
            XCTAssertTrue(FileManager.default.fileExists(atPath: path), "StorageBox names a missing file: \(entry.resourceId)")
        }
        try h.assertIntact(killedEntries, cloud: cloud)
        let stats = try h.run(["stats"])
        XCTAssertEqual(stats.status, 0, stats.stdout + stats.stderr)
        var runs = try h.statusRuns()
        XCTAssertEqual(runs.first { $0["job"] as? String == "prefetch" }?["outcome"] as? String, "running", "the killed run recorded no outcome: \(runs)")

        // Run 2, at full speed and with fresh server counters: exit 0, not 75 (the lock died with
        // the killed process), every selected file intact, no partial left.
        try cloud.resetCounters()
        try cloud.setFaults(FaultConfig(bandwidthBytesPerSecond: 0))
        let second = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
        let c = JobrunHarness.counters(second.stdout)
        XCTAssertEqual(c["failed"], 0, second.stdout)
        XCTAssertEqual((c["downloaded"] ?? 0) + (c["already_cached"] ?? 0), c["selected"], second.stdout)
        // Every file complete on disk at the kill counts, indexed or not: one published just
        // before the kill, ahead of its StorageBox row, is indexed by this run (checked below,
        // every selected file has its entry).
        XCTAssertEqual(c["already_cached"], completeAtKill.count, "files completed before the kill are not fetched again: \(completeAtKill)")
        let entries = try h.prefetchedEntries()
        XCTAssertEqual(entries.count, c["selected"])
        try h.assertIntact(entries, cloud: cloud)
        XCTAssertEqual(h.partialFileNames(), [], "no partial file is left")

        // The resumed files: only their missing parts were fetched, each once.
        try assertResumedWithoutRefetch(atKill, cloud: cloud, entries: entries)

        // The killed run is closed as abandoned by the next run, which succeeded.
        runs = try h.statusRuns().filter { $0["job"] as? String == "prefetch" }
        XCTAssertEqual(runs.count, 2, "\(runs)")
        let killed = runs.first { ($0["message"] as? String)?.contains("pid \(run.pid)") == true }
        XCTAssertEqual(killed?["outcome"] as? String, "failed", "\(runs)")
        XCTAssertTrue((killed?["message"] as? String)?.contains("abandoned") == true, "\(runs)")
        XCTAssertEqual(runs.filter { $0["outcome"] as? String == "succeeded" }.count, 1, "\(runs)")
        XCTAssertTrue(h.logEvents().contains { $0["event"] as? String == "run.abandoned" })
    }

    // MARK: 2. Timeout cancels promptly and keeps the work

    func testTimeoutCancelsPromptlyKeepsPartialsAndTheRerunCompletes() throws {
        let (cloud, h) = try start(seed: 32, bandwidth: 256 << 10, timeout: "2s")  // a 128 KiB part takes 0.5 s
        let began = Date()
        let run = try h.run(["run", "prefetch", "--json"], timeout: 60)
        let elapsed = Date().timeIntervalSince(began)
        XCTAssertEqual(run.status, 1, "a timed-out run exits 1: \(run.stdout) \(run.stderr)")
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        XCTAssertEqual(json["outcome"] as? String, "timed_out", run.stdout)
        // Prompt: the kind stops within ~1.5 s of its 2 s timeout (parts in flight are abandoned,
        // not waited for), and the whole process well within a few seconds of it.
        let duration = try XCTUnwrap((json["duration_ms"] as? NSNumber)?.intValue, run.stdout)
        XCTAssertLessThan(duration, 3_500, "the run overstayed its 2 s timeout: \(duration) ms")
        XCTAssertLessThan(elapsed, 8, "the process took \(elapsed) s")
        let runs = try h.statusRuns().filter { $0["job"] as? String == "prefetch" }
        XCTAssertEqual(runs.first?["outcome"] as? String, "timed_out", "\(runs)")
        XCTAssertEqual((runs.first?["exit_code"] as? NSNumber)?.intValue, 1, "\(runs)")
        XCTAssertTrue((runs.first?["message"] as? String)?.contains("timed out") == true, "\(runs)")

        // The work done so far is kept: partial files with data, StorageBox consistent.
        let atTimeout = h.partials().filter { $0.fileId != nil && $0.present > 0 && !$0.isComplete }
        XCTAssertFalse(atTimeout.isEmpty, "partial files stay after a timeout: \(h.partials())")
        let kept = try h.prefetchedEntries()
        try h.assertIntact(kept, cloud: cloud)

        // A rerun without the cap (and with time) completes everything, resuming the partials.
        try cloud.resetCounters()
        try cloud.setFaults(FaultConfig(bandwidthBytesPerSecond: 0))
        try h.writePrefetchJob(Self.params, timeout: "5m")
        let second = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
        let c = JobrunHarness.counters(second.stdout)
        XCTAssertEqual(c["failed"], 0, second.stdout)
        XCTAssertEqual(c["already_cached"], kept.count, second.stdout)
        let entries = try h.prefetchedEntries()
        XCTAssertEqual(entries.count, c["selected"])
        XCTAssertGreaterThan(entries.count, kept.count)
        try h.assertIntact(entries, cloud: cloud)
        XCTAssertEqual(h.partialFileNames(), [], "no partial file is left")
        try assertResumedWithoutRefetch(atTimeout, cloud: cloud, entries: entries)
    }

    /// SIGTERM takes the same path as the timeout: exit 75 at once, partials kept.
    func testSigtermStopsPromptlyWithExit75AndKeepsPartials() throws {
        let (_, h) = try start(seed: 34, bandwidth: 256 << 10)
        let run = try h.start(["run", "prefetch", "--json"])
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline, run.process.isRunning, !h.partials().contains(where: { $0.present > 0 && !$0.isComplete }) { usleep(20_000) }
        XCTAssertTrue(run.process.isRunning, "the run ended before any file was half done: \(run.stdout) \(run.stderr)")
        let signalled = Date()
        run.signal(SIGTERM)
        let status = run.wait(timeout: 60)
        let elapsed = Date().timeIntervalSince(signalled)
        XCTAssertEqual(status, 75, run.stdout + run.stderr)
        XCTAssertLessThan(elapsed, 3, "SIGTERM waited for the files in flight: \(elapsed) s")
        XCTAssertFalse(h.partials().filter { $0.present > 0 && !$0.isComplete }.isEmpty, "partials are kept")
        let runs = try h.statusRuns().filter { $0["job"] as? String == "prefetch" }
        XCTAssertEqual(runs.first?["outcome"] as? String, "cancelled", "\(runs)")
    }

    // MARK: 3. Progress events

    func testProgressEventsAreThrottledMonotonicAndEndAtTheRunsCounters() throws {
        // concurrency 1 at 320 KiB/s per part (4 parts in flight): ~15 s, so a heartbeat at ~10 s.
        let (_, h) = try start(seed: 33, bandwidth: 320 << 10, params: Self.params.replacingOccurrences(of: "concurrency: 2", with: "concurrency: 1"))
        let run = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        let c = JobrunHarness.counters(run.stdout)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
        let duration = (json["duration_ms"] as? NSNumber)?.intValue ?? 0
        XCTAssertFalse(run.stderr.contains("prefetch: "), "no terminal line when stderr is not a TTY: \(run.stderr)")

        let events = h.logEvents().filter { $0["event"] as? String == "prefetch.progress" }
        func int(_ e: [String: Any], _ key: String) -> Int? { (e[key] as? NSNumber)?.intValue }
        XCTAssertGreaterThanOrEqual(events.count, 2, "a first event and the final one: \(events)")
        if duration > 12_000 { XCTAssertGreaterThanOrEqual(events.count, 3, "a heartbeat every 10 s in a \(duration) ms run: \(events)") }
        XCTAssertLessThanOrEqual(events.count, duration / 10_000 + 2, "throttled to one event per 10 s (plus the final one): \(events)")
        let candidates = (c["selected"] ?? 0) - (c["already_cached"] ?? 0)
        var previous: (files: Int, bytes: Int, ts: Date)?
        for (i, e) in events.enumerated() {
            for key in ["files", "files_total", "bytes", "bytes_total", "rate_bps"] { XCTAssertNotNil(int(e, key), "\(key) in \(e)") }
            XCTAssertEqual(int(e, "files_total"), candidates, "\(e)")
            XCTAssertEqual(int(e, "bytes_total"), int(events[0], "bytes_total"), "\(e)")
            let files = int(e, "files") ?? -1, bytes = int(e, "bytes") ?? -1
            XCTAssertLessThanOrEqual(files, candidates)
            XCTAssertLessThanOrEqual(bytes, int(e, "bytes_total") ?? 0)
            let ts = try XCTUnwrap(Self.date(e["ts"]), "\(e)")
            if let p = previous {
                XCTAssertGreaterThanOrEqual(files, p.files, "files never go back: \(events)")
                XCTAssertGreaterThanOrEqual(bytes, p.bytes, "bytes never go back: \(events)")
                XCTAssertTrue(files > p.files || bytes > p.bytes, "no repeated event: \(events)")
                // Every event but the final one waits out the 10 s interval.
                if i < events.count - 1 { XCTAssertGreaterThanOrEqual(ts.timeIntervalSince(p.ts), 9.9, "\(events)") }
            }
            previous = (files, bytes, ts)
        }
        let last = try XCTUnwrap(events.last)
        XCTAssertEqual(int(last, "files"), candidates, "the final event counts every file: \(last)")
        XCTAssertEqual(int(last, "bytes"), c["bytes"], "the final event's bytes are the run's: \(last)")
        let settled = ["downloaded", "failed", "skipped_budget", "skipped_free_space", "skipped_cache_limit"].reduce(0) { $0 + (c[$1] ?? 0) }
        XCTAssertEqual(int(last, "files"), settled, "\(last)")
        XCTAssertGreaterThan(int(last, "rate_bps") ?? 0, 0, "\(last)")
        XCTAssertEqual(int(last, "eta_s"), 0, "\(last)")
        // The events come before the report.
        let names = h.logEvents().compactMap { $0["event"] as? String }
        XCTAssertLessThan(try XCTUnwrap(names.lastIndex(of: "prefetch.progress")), try XCTUnwrap(names.lastIndex(of: "prefetch.report")))
    }

    // MARK: Helpers

    /// Each file partly on disk at `partials` was completed by fetching only its missing parts:
    /// no part offset inside a range already written was served again, each served offset once,
    /// and the bytes served are exactly the bytes that were missing (server counters since reset).
    func assertResumedWithoutRefetch(
        _ partials: [PartialState], cloud: ClouddProcess, entries: [(StorageBoxEntry, String)],
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        for p in partials {
            let id = try XCTUnwrap(p.fileId)
            let size = try XCTUnwrap(p.size, p.name)
            XCTAssertTrue(entries.contains { $0.0.resourceId == p.resourceId }, "\(p.name) is recorded", file: file, line: line)
            let served = try cloud.filePartCounters(id)
            for (key, count) in served.offsets {
                let offset = try XCTUnwrap(Int64(key))
                XCTAssertEqual(count, 1, "\(p.name): part at \(offset) served \(count) times", file: file, line: line)
                XCTAssertFalse(
                    p.ranges.contains { $0.contains(offset) }, "\(p.name): part at \(offset) was on disk already (\(p.ranges)) and fetched again",
                    file: file, line: line)
            }
            XCTAssertEqual(
                served.bytes, size - p.present, "\(p.name): \(p.present) of \(size) bytes were on disk; served \(served.bytes) more",
                file: file, line: line)
            XCTAssertLessThan(served.bytes, size, "\(p.name) was resumed, not fetched again whole", file: file, line: line)
        }
    }

    static func date(_ value: Any?) -> Date? {
        guard let s = value as? String else { return nil }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: s)
    }
}

/// A `<name>_partial` download as its range record describes it.
struct PartialState: CustomStringConvertible {
    var name: String
    var dataPath: String
    var size: Int64?
    var ranges: [Range<Int64>]
    var present: Int64 { ranges.reduce(Int64(0)) { $0 + ($1.upperBound - $1.lowerBound) } }
    var isComplete: Bool { size.map { present >= $0 } ?? false }
    /// The cloud file id of a document or secret file (`telegram-cloud-document-<dc>-<id>`,
    /// `secret-file-<dc>-<id>`).
    var fileId: Int64? {
        guard name.hasPrefix("telegram-cloud-document-") || name.hasPrefix("secret-file-") else { return nil }
        return name.split(separator: "-").last.flatMap { Int64($0) }
    }
    var resourceId: String { name }  // these ids are their own safe file names
    var description: String { "\(name): \(present)/\(size.map(String.init) ?? "?")" }
}

extension JobrunHarness {
    /// A `prefetch-chat-media` job named `prefetch` with `params` lines and a timeout.
    func writePrefetchJob(_ params: String, timeout: String) throws {
        try writeJob(
            "prefetch",
            """
            name: prefetch
            kind: prefetch-chat-media
            schedule: "*/15 * * * *"
            timeout: \(timeout)
            retry:
              backoffLimit: 0
            params:
              freeSpaceFloor: 0
            \(params)
            """)
    }

    /// The partial downloads of account 0's resources, from the range records of their partial
    /// files (read as MediaBox reads them; a file without a valid record is left out).
    func partials() -> [PartialState] {
        let media = root + "/account-0/postbox/media"
        guard let directory = try? ConfinedDirectory.open(path: media, policy: ConfinementPolicy(allowInsecure: true)) else { return [] }
        return partialDataFileNames().compactMap { partialName in
            let name = String(partialName.dropLast(ResourceStorePaths.partialSuffix.count))
            let paths = ResourceStorePaths(mediaDirectory: media, location: .resources, fileName: name)
            guard let record = MediaBoxPartialFile.record(of: paths, in: directory) else { return nil }
            return PartialState(name: name, dataPath: paths.partial, size: record.totalSize, ranges: record.ranges)
        }
    }

    /// The `…_partial` files (downloads in progress) in account 0's media directory.
    func partialDataFileNames() -> [String] { partialFileNames().filter { $0.hasSuffix(ResourceStorePaths.partialSuffix) } }

    /// Every name of account 0's media directory that is not a partial download or beside one.
    func completeFileNames() -> [String] {
        ((try? MediaShard.storedFileNames(in: root + "/account-0/postbox/media")) ?? []).filter { !$0.contains("_partial") }.sorted()
    }

    /// Every `…_partial` / `…_partial.want` name in account 0's media directory.
    func partialFileNames() -> [String] {
        ((try? MediaShard.storedFileNames(in: root + "/account-0/postbox/media")) ?? []).filter { $0.contains("_partial") }.sorted()
    }

    /// `jobrun status --json`, parsed.
    func statusRuns() throws -> [[String: Any]] {
        let status = try run(["status", "--json", "--limit", "20"])
        XCTAssertEqual(status.status, 0, status.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], status.stdout)
        return try XCTUnwrap(object["runs"] as? [[String: Any]], status.stdout)
    }
}

extension ClouddProcess {
    /// Part answers of one file by offset since the last counter reset (`GET /admin/counters/files/<id>`).
    func filePartCounters(_ id: Int64) throws -> FilePartCounters { try admin("counters/files/\(id)", as: FilePartCounters.self) }
}
