import Foundation
import XCTest

@testable import Jobs

final class MetricsTests: XCTestCase {
    func testTextfileFormat() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = MetricsWriter(root: DataRoot(url: directory))
        let started = Date(timeIntervalSince1970: 1_800_000_000)
        let url = try writer.write(
            RunMetrics(
                job: "time-based-cleanup", kind: "time-based-cleanup", started: started,
                finished: started.addingTimeInterval(12.5), outcome: .succeeded,
                counters: ["bytes_freed": 4096, "files-removed": 3],
                samples: [
                    MetricSample(
                        "freed_bytes", labels: ["peer": "chan \"news\"\\x\nnext", "content_type": "photo"],
                        value: 2048, type: .counter, help: "Bytes freed.")
                ]))
        XCTAssertEqual(url, directory.appendingPathComponent("metrics/jobrun_time-based-cleanup.prom"))
        let text = try String(contentsOf: url, encoding: .utf8)
        let base = "jobrun_job=\"time-based-cleanup\",kind=\"time-based-cleanup\""
        let expectedLines = [
            "# HELP jobrun_last_run_timestamp_seconds Unix time the last run of the job started.",
            "# TYPE jobrun_last_run_timestamp_seconds gauge",
            "jobrun_last_run_timestamp_seconds{\(base)} 1800000000",
            "jobrun_last_success_timestamp_seconds{\(base)} 1800000012.5",
            "jobrun_last_run_duration_seconds{\(base)} 12.5",
            "jobrun_last_run_outcome{\(base),outcome=\"succeeded\"} 1",
            "jobrun_last_run_outcome{\(base),outcome=\"failed\"} 0",
            "jobrun_last_run_outcome{\(base),outcome=\"timed_out\"} 0",
            "# TYPE jobrun_time_based_cleanup_bytes_freed gauge",
            "jobrun_time_based_cleanup_bytes_freed{\(base)} 4096",
            "jobrun_time_based_cleanup_files_removed{\(base)} 3",
            "# HELP jobrun_freed_bytes_total Bytes freed.",
            "# TYPE jobrun_freed_bytes_total counter",
            "jobrun_freed_bytes_total{\(base),content_type=\"photo\",peer=\"chan \\\"news\\\"\\\\x\\nnext\"} 2048",
            "jobrun_runs_total{\(base),outcome=\"succeeded\"} 1",
            "jobrun_runs_total{\(base),outcome=\"suspended\"} 0",
        ]
        let lines = Set(text.split(separator: "\n").map(String.init))
        for line in expectedLines { XCTAssertTrue(lines.contains(line), "missing: \(line)\n\(text)") }
        // Every sample line is `name{labels} value` with a preceding TYPE for its family.
        var typed = Set<String>()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") { typed.insert(String(line.split(separator: " ")[2])); continue }
            if line.hasPrefix("#") { continue }
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            XCTAssertTrue(typed.contains(name), "no TYPE before \(line)")
            XCTAssertNotNil(Double(line.split(separator: " ").last!), String(line))
        }
        var info = stat()
        XCTAssertEqual(stat(url.path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644)
    }

    func testLastSuccessSurvivesAFailureAndReplacementIsAtomic() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = MetricsWriter(directory: directory)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let url = try writer.write(RunMetrics(job: "j", kind: "upload-queue", started: t0, finished: t0.addingTimeInterval(1), outcome: .succeeded))
        var before = stat()
        stat(url.path, &before)
        try writer.write(RunMetrics(job: "j", kind: "upload-queue", started: t0.addingTimeInterval(60), finished: t0.addingTimeInterval(61), outcome: .failed))
        let text = try String(contentsOf: url, encoding: .utf8)
        XCTAssertTrue(text.contains("jobrun_last_success_timestamp_seconds{jobrun_job=\"j\",kind=\"upload-queue\"} 1800000001\n"), text)
        XCTAssertTrue(text.contains("outcome=\"failed\"} 1\n"))
        var after = stat()
        stat(url.path, &after)
        XCTAssertNotEqual(before.st_ino, after.st_ino, "replaced by rename, not rewritten in place")
        // No temp files are left behind.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["jobrun_j.prom"])
    }

    func testReadersNeverSeeAPartialFile() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = MetricsWriter(directory: directory)
        let counters = Dictionary(uniqueKeysWithValues: (0..<300).map { ("counter_\($0)", Double($0)) })
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let url = try writer.write(RunMetrics(job: "big", kind: "k", started: t0, finished: t0, outcome: .succeeded, counters: counters))
        let complete = try String(contentsOf: url, encoding: .utf8)
        let lastLine = String(complete.split(separator: "\n").last!) + "\n"
        let lineCount = complete.split(separator: "\n").count
        let stop = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var torn = 0
        let reader = Thread {
            while stop.wait(timeout: .now()) == .timedOut {
                if let text = try? String(contentsOf: url, encoding: .utf8),
                    !text.hasSuffix(lastLine) || text.split(separator: "\n").count != lineCount
                {
                    torn += 1
                }
            }
        }
        reader.start()
        for index in 0..<80 {
            try writer.write(
                RunMetrics(job: "big", kind: "k", started: t0.addingTimeInterval(Double(index)), finished: t0, outcome: .succeeded, counters: counters))
        }
        stop.signal()
        Thread.sleep(forTimeInterval: 0.05)
        XCTAssertEqual(torn, 0)
        XCTAssertTrue(complete.contains("jobrun_k_counter_299{jobrun_job=\"big\",kind=\"k\"} 299\n"))
    }

    func testPeerSeriesAreBoundedAndRunCountsAccumulateAcrossRunsSkipsAndSuspensions() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = MetricsWriter(directory: directory)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let peers = (1...30).map { MetricSample("cleanup_freed_bytes", labels: ["peer": "\($0)"], value: Double($0)) }
        let url = try writer.write(RunMetrics(job: "c", kind: "time-based-cleanup", started: t0, finished: t0, outcome: .succeeded, samples: peers))
        var text = try String(contentsOf: url, encoding: .utf8)
        let series = text.split(separator: "\n").filter { $0.hasPrefix("jobrun_cleanup_freed_bytes{") }
        XCTAssertEqual(series.count, MetricsWriter.maxPeerSeries + 1, "the largest peers and one 'other': \(series)")
        XCTAssertTrue(text.contains("peer=\"30\"} 30\n"), text)
        XCTAssertTrue(text.contains("peer=\"other\"} \((1...20).reduce(0, +))\n"), "the rest is summed, not lost: \(text)")
        XCTAssertTrue(text.contains("jobrun_build_info{jobrun_job=\"c\",version=\"\(BuildInfo.version)\""), text)

        try writer.count(job: "c", kind: "time-based-cleanup", outcome: "skipped")
        try writer.count(job: "c", kind: "time-based-cleanup", outcome: "suspended")
        try writer.count(job: "c", kind: "time-based-cleanup", outcome: "suspended")
        text = try String(contentsOf: url, encoding: .utf8)
        XCTAssertTrue(
            text.contains("jobrun_last_run_timestamp_seconds{jobrun_job=\"c\",kind=\"time-based-cleanup\"} 1800000000\n"), "a skip keeps the last run: \(text)")
        try writer.write(RunMetrics(job: "c", kind: "time-based-cleanup", started: t0, finished: t0, outcome: .failed))
        text = try String(contentsOf: url, encoding: .utf8)
        for (outcome, count) in [("succeeded", 1), ("failed", 1), ("skipped", 1), ("suspended", 2), ("timed_out", 0)] {
            XCTAssertTrue(
                text.contains("jobrun_runs_total{jobrun_job=\"c\",kind=\"time-based-cleanup\",outcome=\"\(outcome)\"} \(count)\n"), "\(outcome): \(text)")
        }
        XCTAssertEqual(text.components(separatedBy: "# TYPE jobrun_runs_total counter").count, 2, "one family: \(text)")

        // A job whose first event is a suspension still gets a valid file.
        let fresh = try writer.count(job: "never", kind: "upload-queue", outcome: "suspended")
        let freshText = try String(contentsOf: fresh, encoding: .utf8)
        XCTAssertTrue(freshText.contains("jobrun_runs_total{jobrun_job=\"never\",kind=\"upload-queue\",outcome=\"suspended\"} 1\n"), freshText)
        XCTAssertTrue(freshText.hasPrefix("# HELP jobrun_build_info"), freshText)
    }

    func testEscapingAndNames() {
        XCTAssertEqual(PrometheusText.escapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd")
        XCTAssertEqual(PrometheusText.escapeHelp("a\"b\\c\nd\r\n é"), "a\"b\\\\c\\nd\r\\n é")
        XCTAssertEqual(PrometheusText.sanitizeName("9bytes-freed.total"), "_bytes_freed_total")
        XCTAssertEqual(PrometheusText.formatValue(.infinity), "+Inf")
        XCTAssertEqual(PrometheusText.formatValue(.nan), "NaN")
    }
}
