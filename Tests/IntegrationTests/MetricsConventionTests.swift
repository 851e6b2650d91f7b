import Foundation
import Jobs
import TestSupport
import XCTest

/// The metrics files as Prometheus sees them: every file the demo writes passes
/// `promtool check metrics`, and a real `prometheus-node-exporter` textfile collector serves
/// them under their documented names, without the `job` label clash.
final class MetricsConventionTests: XCTestCase {
    /// Families whose names do not depend on the kind (documented literally).
    static let fixedFamilies = [
        "jobrun_build_info", "jobrun_last_run_timestamp_seconds", "jobrun_last_run_end_timestamp_seconds",
        "jobrun_last_success_timestamp_seconds", "jobrun_last_run_duration_seconds", "jobrun_last_run_outcome", "jobrun_runs_total",
    ]

    func testEveryDemoMetricsFilePassesPromtoolAndIsScrapedThroughNodeExporter() throws {
        let promtool = try Self.tool("promtool")
        let nodeExporter = try Self.tool("prometheus-node-exporter")
        let dir = TemporaryDirectory(prefix: "jobrun-metrics")
        let root = dir.file("root")
        let demo = try ChildProcess(Products.executable("jobrun"), ["demo", "--json", "--root", root])
        XCTAssertEqual(demo.wait(timeout: 300), 0, demo.stderr)
        // A suspended and a skipped-by-overlap run add their counts to a file the demo wrote.
        let jobs = root + "/jobs"
        let pause = try ChildProcess(Products.executable("jobrun"), ["pause", "upload-queue", "--root", root, "--jobs-dir", jobs])
        XCTAssertEqual(pause.wait(), 0, pause.stderr)
        let suspended = try ChildProcess(Products.executable("jobrun"), ["run", "upload-queue", "--scheduled", "--root", root, "--jobs-dir", jobs])
        XCTAssertEqual(suspended.wait(), 0, suspended.stderr)

        let metrics = root + "/metrics"
        let files = try FileManager.default.contentsOfDirectory(atPath: metrics).filter { $0.hasSuffix(".prom") }.sorted()
        XCTAssertEqual(files.count, JobKindRegistry.shipped.names.count, "one file per demo job (every shipped kind): \(files)")
        var families = Set<String>()
        for file in files {
            let text = try String(contentsOfFile: metrics + "/" + file, encoding: .utf8)
            let check = try ChildProcess("/bin/sh", ["-c", "exec \"$0\" check metrics < \"$1\"", promtool, metrics + "/" + file])
            XCTAssertEqual(check.wait(), 0, "promtool check metrics \(file): \(check.stdout)\(check.stderr)")
            XCTAssertEqual(check.stdout + check.stderr, "", "no lint finding in \(file)")
            XCTAssertFalse(text.contains("{job="), "no `job` label (Prometheus would rename it exported_job): \(file)")
            for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") { families.insert(String(line.split(separator: " ")[2])) }
        }
        let upload = try String(contentsOfFile: metrics + "/jobrun_upload-queue.prom", encoding: .utf8)
        XCTAssertTrue(upload.contains("jobrun_runs_total{jobrun_job=\"upload-queue\",kind=\"upload-queue\",outcome=\"suspended\"} 1\n"), upload)
        XCTAssertTrue(upload.contains("jobrun_runs_total{jobrun_job=\"upload-queue\",kind=\"upload-queue\",outcome=\"succeeded\"} 1\n"), upload)

        // Every family is documented: the fixed ones by name, the kinds' under their kind's prefix.
        let docs = try String(contentsOfFile: Self.repository + "/docs/logging-and-metrics.md", encoding: .utf8)
        for family in families {
            XCTAssertTrue(docs.contains("`\(family)`") || Self.kindPrefixes.contains { family.hasPrefix($0) }, "\(family) is not documented")
        }
        for family in Self.fixedFamilies { XCTAssertTrue(families.contains(family), "\(family) is missing from the files") }

        // The textfile collector, on a loopback port, serves them.
        let port = try FreePort.pick()
        let exporter = try ChildProcess(
            nodeExporter,
            [
                "--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory=\(metrics)",
                "--web.listen-address=127.0.0.1:\(port)",
            ])
        defer {
            exporter.signal(SIGTERM)
            exporter.wait()
        }
        var scrape = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let curl = try ChildProcess("/usr/bin/curl", ["-sf", "http://127.0.0.1:\(port)/metrics"])
            if curl.wait() == 0 {
                scrape = curl.stdout
                break
            }
            usleep(200_000)
        }
        XCTAssertFalse(scrape.isEmpty, "node_exporter answered: \(exporter.stderr)")
        XCTAssertTrue(scrape.contains("node_textfile_scrape_error 0"), "the collector read every file: \(scrape.prefix(2000))")
        for job in ["sync-history", "prefetch-chat-media", "revalidate-references", "upload-queue", "time-based-cleanup"] {
            XCTAssertTrue(
                scrape.contains("jobrun_last_success_timestamp_seconds{jobrun_job=\"\(job)\",kind=\"\(job)\"}"), "\(job) is served under its documented name")
        }
        XCTAssertTrue(scrape.contains("jobrun_build_info{"), "build info is served")
        XCTAssertTrue(scrape.contains("jobrun_revalidation_parents{"), "a labelled per-kind family is served")
        XCTAssertTrue(scrape.contains("jobrun_prefetch_skipped_files{jobrun_job=\"prefetch-chat-media\",kind=\"prefetch-chat-media\",reason=\"budget\"}"))
        XCTAssertFalse(scrape.contains("jobrun_prefetch_chat_media_skipped_budget"), "a label, not a flattened name")
        XCTAssertFalse(scrape.contains("exported_job"))
    }

    /// Per-kind families: `jobrun_<kind>_…` for every shipped kind (documented by the generic
    /// row and the kind's own document).
    static var kindPrefixes: [String] {
        JobKindRegistry.shipped.names.map { "jobrun_" + $0.replacingOccurrences(of: "-", with: "_") + "_" }
    }

    static var repository: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// A Debian-packaged tool `scripts/install-deps.sh` installs: its absence is a broken setup.
    static func tool(_ name: String) throws -> String {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin"] where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
            return "\(directory)/\(name)"
        }
        throw FixtureMissing("\(name) is not installed: run scripts/install-deps.sh")
    }
}
