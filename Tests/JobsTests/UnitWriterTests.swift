import Foundation
import XCTest

@testable import Jobs

/// Generated units pass `systemd-analyze verify` with empty stderr, and `cron/` matches them.
final class UnitWriterTests: XCTestCase {
    private func shippedJobs() throws -> [JobFile] {
        try JobCatalog.loadStrict(directory: TestPaths.repositoryRoot.appendingPathComponent("jobs")).jobs
    }

    private func verify(_ directory: URL, files: [URL]) throws {
        guard let analyze = TestPaths.which("systemd-analyze") else {
            throw XCTSkip("systemd-analyze is not installed; cannot verify units")
        }
        let (status, out, err) = try TestPaths.run(
            analyze, ["verify"] + files.map(\.path),
            environment: ["PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0", "SYSTEMD_LOG_LEVEL": "notice"])
        XCTAssertEqual(err, "", "systemd-analyze verify stderr")
        XCTAssertEqual(status, 0, "status \(status): \(out) \(err)")
    }

    func testGeneratedUnitsVerifyClean() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // A job with dom/dow OR (two OnCalendar lines), a time zone and an unscheduled one too.
        var jobs = try shippedJobs()
        jobs.append(
            try JobFile.parse(
                yaml: """
                    name: odd-one
                    kind: upload-queue
                    schedule: "0 0 13 * FRI"
                    timeZone: Europe/Berlin
                    timeout: 90s
                    """, file: "odd.yaml"))
        jobs.append(try JobFile.parse(yaml: "name: by-hand\nkind: upload-queue\n", file: "hand.yaml"))
        let writer = UnitWriter(options: .init(binary: "/bin/true", root: root.path, jobsDirectory: directory.path))
        let files = try writer.write(jobs: jobs, to: directory.appendingPathComponent("units"))
        XCTAssertEqual(files.count, jobs.count * 2 - 1)
        let odd = try String(contentsOf: directory.appendingPathComponent("units/jobrun-odd-one.timer"), encoding: .utf8)
        XCTAssertTrue(odd.contains("OnCalendar=Fri *-*-* 00:00:00 Europe/Berlin\nOnCalendar=*-*-13 00:00:00 Europe/Berlin\n"), odd)
        XCTAssertTrue(odd.contains("Persistent=true"))
        let service = try String(contentsOf: directory.appendingPathComponent("units/jobrun-odd-one.service"), encoding: .utf8)
        XCTAssertTrue(service.contains("ExecStart=/bin/true run odd-one --scheduled --root \(root.path) --jobs-dir \(directory.path)\n"), service)
        XCTAssertTrue(service.contains("TimeoutStartSec=150s"))
        XCTAssertTrue(service.contains("ReadWritePaths=\(root.path)"))
        XCTAssertTrue(service.contains("\nLoadCredential=jobrun-store-key\n"), "the root's key comes as a systemd credential: \(service)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("units/jobrun-by-hand.timer").path))
        try verify(directory, files: files)

        // Template mode, as shipped in cron/.
        let template = UnitWriter(options: .init(binary: "/bin/true", root: root.path, jobsDirectory: directory.path, template: true))
        let templateFiles = try template.write(jobs: try shippedJobs(), to: directory.appendingPathComponent("template"))
        try verify(directory, files: templateFiles)
    }

    /// `cron/` is what `jobrun units --template` and `UnitWriter.crontabLine` produce for `jobs/`.
    /// Run with JOBS_REGENERATE_CRON=1 to rewrite it after changing the job files.
    func testShippedCronDirectoryMatchesGenerator() throws {
        let cron = TestPaths.repositoryRoot.appendingPathComponent("cron")
        let writer = UnitWriter(options: .init(template: true))
        let jobs = try shippedJobs()
        var expected: [String: String] = [:]
        for unit in writer.units(for: jobs) { expected[unit.fileName] = unit.contents }
        expected["jobrun.crontab"] = Self.crontab(jobs, writer: writer)
        if ProcessInfo.processInfo.environment["JOBS_REGENERATE_CRON"] == "1" {
            try FileManager.default.createDirectory(at: cron, withIntermediateDirectories: true)
            for (name, contents) in expected { try contents.write(to: cron.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        }
        for (name, contents) in expected {
            let actual = try? String(contentsOf: cron.appendingPathComponent(name), encoding: .utf8)
            XCTAssertEqual(actual, contents, "cron/\(name) is out of date (JOBS_REGENERATE_CRON=1 swift test --filter UnitWriterTests)")
        }
        // The shipped units verify too (with the binary pointed at /bin/true).
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var files: [URL] = []
        for (name, contents) in expected where name.hasSuffix(".service") || name.hasSuffix(".timer") {
            let url = directory.appendingPathComponent(name)
            try contents.replacingOccurrences(of: "/usr/local/bin/jobrun", with: "/bin/true").write(to: url, atomically: true, encoding: .utf8)
            files.append(url)
        }
        try verify(directory, files: files.sorted { $0.path < $1.path })
    }

    static func crontab(_ jobs: [JobFile], writer: UnitWriter) -> String {
        writer.crontab(for: jobs)
    }
}
