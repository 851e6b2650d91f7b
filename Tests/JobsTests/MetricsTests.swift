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
        let base = "job=\"time-based-cleanup\",kind=\"time-based-cleanup\""
        let expectedLines = [
            "# HELP jobrun_last_run_timestamp_seconds Unix time the last run of the job started.",
            "# TYPE jobrun_last_run_timestamp_seconds gauge",
            "jobrun_last_run_timestamp_seconds{\(base)} 1800000000",
            "jobrun_last_success_timestamp_seconds{\(base)} 1800000012.5",
            "jobrun_last_run_duration_seconds{\(base)} 12.5",
            "jobrun_last_run_outcome{\(base),outcome=\"succeeded\"} 1",
            "jobrun_last_run_outcome{\(base),outcome=\"failed\"} 0",
            "jobrun_last_run_outcome{\(base),outcome=\"timed_out\"} 0",
            "# TYPE jobrun_bytes_freed gauge",
            "jobrun_bytes_freed{\(base)} 4096",
            "jobrun_files_removed{\(base)} 3",
            "# HELP jobrun_freed_bytes Bytes freed.",
            "# TYPE jobrun_freed_bytes counter",
            "jobrun_freed_bytes{\(base),content_type=\"photo\",peer=\"chan \\\"news\\\"\\\\x\\nnext\"} 2048",
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
        XCTAssertTrue(text.contains("jobrun_last_success_timestamp_seconds{job=\"j\",kind=\"upload-queue\"} 1800000001\n"), text)
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
        XCTAssertTrue(complete.contains("jobrun_counter_299{job=\"big\",kind=\"k\"} 299\n"))
    }

    func testEscapingAndNames() {
        XCTAssertEqual(PrometheusText.escapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd")
        XCTAssertEqual(PrometheusText.sanitizeName("9bytes-freed.total"), "_bytes_freed_total")
        XCTAssertEqual(PrometheusText.formatValue(.infinity), "+Inf")
        XCTAssertEqual(PrometheusText.formatValue(.nan), "NaN")
    }
}
