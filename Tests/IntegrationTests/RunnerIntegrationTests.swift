import Foundation
import Postbox
import TestSupport
import XCTest

/// The runner as cron, systemd and people use it: real `jobrun` processes on one data root.
final class RunnerIntegrationTests: XCTestCase {
    func testSecondRunExits75AndACrashedHolderNeverBlocksTheNext() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        // The first run holds its lock for a while (failpoint), the second must not run.
        let holder = try h.start(["run", "cleanup"], failpoints: "after-start-record=sleep(60000)")
        let lockFile = h.root + "/locks/cleanup.lock"
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, (try? String(contentsOfFile: lockFile, encoding: .utf8))?.contains("\(holder.pid)") != true { usleep(50_000) }
        // The holder takes its lock before it records its start: wait for the record too, so the
        // kill below always finds a started run to abandon (a loaded machine may be slow here).
        func holderRecorded() -> Bool {
            guard let postbox = try? h.accountPostbox() else { return false }
            return (try? postbox.readSync { try $0.jobRuns.recent(job: "cleanup", limit: 10) })?.contains { $0.pid == holder.pid } == true
        }
        while Date() < deadline, !holderRecorded() { usleep(50_000) }
        let second = try h.run(["run", "cleanup", "-v"])
        XCTAssertEqual(second.status, 75, "a second run of a Forbid job exits EX_TEMPFAIL: \(second.stderr)")
        XCTAssertTrue(second.stderr.contains("already running") && second.stderr.contains("pid \(holder.pid)"), second.stderr)

        holder.signal(SIGKILL)
        holder.wait()
        let third = try h.run(["run", "cleanup"])
        XCTAssertEqual(third.status, 0, "the lock of a SIGKILLed holder is gone with it: \(third.stderr)")

        let postbox = try h.accountPostbox()
        let runs = try postbox.readSync { try $0.jobRuns.recent(job: "cleanup", limit: 10) }
        XCTAssertEqual(runs.filter { $0.outcome == .succeeded }.count, 1)
        XCTAssertEqual(runs.count, 2, "the skipped run records nothing; the killed one and the next do")
        let killed = runs.first { $0.pid == holder.pid }
        XCTAssertEqual(killed?.outcome, .failed, "the next run closes the killed run's record")
        XCTAssertTrue(killed?.message?.contains("abandoned") == true, killed?.message ?? "no message")
    }

    func testRunOnAnInvalidJobRunsNothingAndExits78() throws {
        let h = JobrunHarness()
        try h.writeJob(
            "broken",
            """
            name: broken
            kind: time-based-cleanup
            schedule: "0 3 30 2 *"
            params:
              maxSize: 1GiB
            """)
        let result = try h.run(["run", "broken"])
        XCTAssertEqual(result.status, 78)
        XCTAssertTrue(result.stderr.contains("broken.yaml:3:"), "the error names file:line:column: \(result.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.root + "/account-0"), "nothing ran, nothing was created")
    }

    func testValidateNamesEveryErrorAndExits78() throws {
        let h = JobrunHarness()
        let bad: [(String, String, String)] = [
            ("unknown-key", "name: a\nkind: time-based-cleanup\nschedul: \"@daily\"\nparams: {maxSize: 1GiB}\n", "unknown-key.yaml:3:1"),
            ("bad-cron", "name: b\nkind: time-based-cleanup\nschedule: \"61 * * * *\"\nparams: {maxSize: 1GiB}\n", "bad-cron.yaml:3:"),
            ("bad-kind", "name: c\nkind: defrag\n", "bad-kind.yaml:2:7"),
            ("missing-param", "name: d\nkind: time-based-cleanup\n", "missing-param.yaml:"),
            ("bad-duration", "name: e\nkind: time-based-cleanup\ntimeout: 5x\nparams: {maxSize: 1GiB}\n", "bad-duration.yaml:3:11"),
        ]
        for (name, yaml, _) in bad { try h.writeJob(name, yaml) }
        try h.writeCleanupJob("good")
        let result = try h.run(["validate"])
        XCTAssertEqual(result.status, 78, result.stderr)
        for (_, _, position) in bad { XCTAssertTrue(result.stderr.contains(position), "missing \(position) in:\n\(result.stderr)") }
        XCTAssertTrue(result.stdout.contains("good"), "valid files are listed as ok: \(result.stdout)")
        let one = try h.run(["validate", h.jobsDir + "/good.yaml"])
        XCTAssertEqual(one.status, 0, one.stderr)
    }

    func testScheduleRunsTwoJobsConcurrentlyOverOnePostboxAndStopsOnSIGTERM() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup-a")
        try h.writeCleanupJob("cleanup-b")
        let scheduler = try h.start(["schedule", "--now"], failpoints: "after-start-record=sleep(1500)")
        // Wait until both runs have finished once.
        let deadline = Date().addingTimeInterval(120)
        var finished: [[String: Any]] = []
        while Date() < deadline {
            finished = h.logEvents().filter { $0["event"] as? String == "run.finished" }
            if finished.count >= 2 { break }
            usleep(100_000)
        }
        XCTAssertEqual(Set(finished.compactMap { $0["job"] as? String }), ["cleanup-a", "cleanup-b"])
        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(timeout: 60), 0, "SIGTERM stops the scheduler cleanly: \(scheduler.stderr)")

        let events = h.logEvents()
        let pids = Set(events.filter { $0["event"] as? String == "run.started" }.compactMap { $0["pid"] as? Int })
        XCTAssertEqual(pids, [Int(scheduler.pid)], "both jobs ran inside the scheduler process")
        // Concurrent: each job started before the other finished.
        func time(_ job: String, _ event: String) -> String {
            events.first { $0["job"] as? String == job && $0["event"] as? String == event }?["ts"] as? String ?? ""
        }
        XCTAssertLessThan(time("cleanup-a", "run.started"), time("cleanup-b", "run.finished"))
        XCTAssertLessThan(time("cleanup-b", "run.started"), time("cleanup-a", "run.finished"))
        XCTAssertTrue(events.contains { $0["event"] as? String == "scheduler.stopped" })

        let postbox = try h.accountPostbox()
        let names = try postbox.readSync { try $0.jobRuns.jobNames() }
        XCTAssertEqual(names, ["cleanup-a", "cleanup-b"])
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
    }

    func testLogsArePerProcessJSONLinesAndStatusReadsTheHistory() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: h.root + "/logs/run-logs/run.log"))
        let events = h.logEvents()
        XCTAssertFalse(events.isEmpty)
        for e in events {
            for key in ["ts", "level", "process", "pid", "event"] { XCTAssertNotNil(e[key], "every line has \(key): \(e)") }
        }
        let status = try h.run(["status", "--json"])
        XCTAssertEqual(status.status, 0, status.stderr)
        let runs = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["runs"] as? [[String: Any]]
        XCTAssertEqual(runs?.first?["job"] as? String, "cleanup")
        XCTAssertEqual(runs?.first?["outcome"] as? String, "succeeded")
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_cleanup.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_last_run_outcome{jobrun_job=\"cleanup\",kind=\"time-based-cleanup\",outcome=\"succeeded\"} 1"), metrics)
        let mode = try FileManager.default.attributesOfItem(atPath: h.root + "/logs/run-logs/run.log")[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)
    }

    func testUnitsPassSystemdAnalyzeVerify() throws {
        guard FileManager.default.fileExists(atPath: "/usr/bin/systemd-analyze") else {
            throw XCTSkip("systemd-analyze is not installed here")
        }
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup", schedule: "\"*/15 9-17 1,15 * MON-FRI\"")
        let out = h.dir.file("units")
        let result = try h.run(["units", "--out", out, "--binary", h.binary])
        XCTAssertEqual(result.status, 0, result.stderr)
        let files = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        XCTAssertEqual(files, ["jobrun-cleanup.service", "jobrun-cleanup.timer", "jobrun-failure@.service"])
        let timer = try String(contentsOfFile: out + "/jobrun-cleanup.timer", encoding: .utf8)
        XCTAssertEqual(timer.components(separatedBy: "OnCalendar=").count - 1, 2, "cron's dom/dow OR needs two OnCalendar lines:\n\(timer)")
        let verify = try ChildProcess.run("/usr/bin/systemd-analyze", ["verify"] + files.map { out + "/" + $0 })
        XCTAssertEqual(verify.stderr, "", "systemd-analyze verify must print nothing")
    }
}
