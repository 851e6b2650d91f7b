import Foundation
import Postbox
import TestSupport
import XCTest

/// What an operator meets trying the commands by hand, with the built `jobrun`: a mistyped root
/// or name, a slow heartbeat endpoint, systemd reporting a failure jobrun already reported, an
/// invalid environment value, a missed start, and the unit generator's options.
final class OperatorEdgeTests: XCTestCase {
    /// This machine's name as jobrun records it.
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func testCommandsAgainstARootThatDoesNotExistExit66AndCreateNothing() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        let file = h.dir.file("photo.jpg")
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: file))
        let mistyped = h.dir.file("roto")
        let commands = [
            ["status"], ["stats"], ["pause", "tidy"], ["resume", "tidy"], ["enqueue-upload", file, "--peer", "1001"], ["notify-failure", "tidy"],
        ]
        for command in commands {
            let p = try ChildProcess(h.binary, command + ["--root", mistyped, "--jobs-dir", h.jobsDir])
            XCTAssertEqual(p.wait(), 66, "\(command): \(p.stderr)")
            XCTAssertTrue(p.stderr.contains(mistyped), "\(command) names the root: \(p.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: mistyped), "\(command) created \(mistyped)")
        }
        // The commands that run jobs may create a fresh root they were told to use.
        let run = try ChildProcess(h.binary, ["run", "tidy", "--root", mistyped, "--jobs-dir", h.jobsDir])
        XCTAssertEqual(run.wait(), 0, run.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: mistyped + "/metrics"))
        let pause = try ChildProcess(h.binary, ["pause", "tidy", "--root", mistyped, "--jobs-dir", h.jobsDir])
        XCTAssertEqual(pause.wait(), 0, pause.stderr)
    }

    func testStatusRefusesAMissingJobsDirectoryAndAnUnknownJob() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        XCTAssertEqual(try h.run(["run", "tidy"]).status, 0)
        let missing = try ChildProcess(h.binary, ["status", "--root", h.root, "--jobs-dir", "/nonexistent-jobs"])
        XCTAssertEqual(missing.wait(), 66, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("/nonexistent-jobs"), missing.stderr)
        let unknown = try h.run(["status", "--job", "tidi"])
        XCTAssertEqual(unknown.status, 64, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("did you mean 'tidy'"), unknown.stderr)
        XCTAssertEqual(try h.run(["status", "--job", "tidy"]).status, 0)
        // Without --jobs-dir or $JOBRUN_JOBS_DIR a missing ./jobs only leaves the rows to the history.
        let historyOnly = try ChildProcess(h.binary, ["status", "--root", h.root], environment: ["JOBRUN_JOBS_DIR": ""], currentDirectory: h.dir.path)
        XCTAssertEqual(historyOnly.wait(), 0, historyOnly.stderr)
        XCTAssertTrue(historyOnly.stdout.contains("tidy"), historyOnly.stdout)
    }

    func testStatusKeepsTheLastSuccessAndFailureBehindManyNewerRunsAndNamesTheHost() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        let ok = try h.run(["run", "tidy", "--json"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        let first = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(ok.stdout.utf8)) as? [String: Any])
        let successRun = try XCTUnwrap(first["run"] as? String)

        // 60 newer failed runs, newer than the success, written as the runner writes them.
        let postbox = try h.accountPostbox(readOnly: false)
        let base = Int64(Date().timeIntervalSince1970 * 1000) + 1000
        try postbox.transactionSync { tx in
            for i in 0..<60 {
                var run = JobRunRecord(runId: "failed\(i)", job: "tidy", kind: "time-based-cleanup", startedAt: base + Int64(i) * 1000, pid: 1)
                run.endedAt = run.startedAt + 10
                run.outcome = .failed
                run.exitCode = 1
                run.host = "other-host"
                try tx.jobRuns.set(run)
            }
        }
        let status = try h.run(["status", "--json"])
        XCTAssertEqual(status.status, 0, status.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let row = try XCTUnwrap((object["jobs"] as? [[String: Any]])?.first { $0["job"] as? String == "tidy" })
        XCTAssertNotNil(row["last_success"] as? String, "the success behind 60 newer runs is still the last success: \(row)")
        XCTAssertEqual(row["last_outcome"] as? String, "failed")
        let formatter = ISO8601DateFormatter()
        let lastFailure = try XCTUnwrap((row["last_failure"] as? String).flatMap(formatter.date(from:)))
        XCTAssertEqual(lastFailure.timeIntervalSince1970, Double(base + 59_000 + 10) / 1000, accuracy: 1)
        XCTAssertEqual(row["last_run_host"] as? String, "other-host")
        let runs = try XCTUnwrap(object["runs"] as? [[String: Any]])
        XCTAssertEqual(runs.count, 5, "--limit 5 by default")
        XCTAssertFalse(runs.contains { $0["run"] as? String == successRun }, "the success is not among the recent runs")

        // The success's host, as its record names it (here, this machine).
        let success = try postbox.readSync { try $0.jobRuns.latest(job: "tidy", .success) }
        XCTAssertEqual(success?.runId, successRun)
        XCTAssertEqual(success?.host, Self.hostName)
        let text = try h.run(["status", "--runs"])
        XCTAssertTrue(text.stdout.contains("HOST") && text.stdout.contains("LAST FAILURE"), text.stdout)
        XCTAssertTrue(text.stdout.contains("on other-host"), "each run names its host: \(text.stdout)")
    }

    func testAFailureJobrunReportedIsCountedAndPingedOnceWhenSystemdReportsItToo() throws {
        let pings = try AlertIntegrationTests.PingRecorder()
        let h = JobrunHarness()
        try FileManager.default.createDirectory(atPath: h.account, withIntermediateDirectories: true)
        try "datacenters:\n  1: http://127.0.0.1:9\ncdn: http://127.0.0.1:9\nmainDc: 1\n".write(
            toFile: h.account + "/config.yaml", atomically: true, encoding: .utf8)
        try h.writeJob("sync", "name: sync\nkind: sync-history\ntimeout: 60s\nretry:\n  backoffLimit: 0\nheartbeat: \(pings.listener.baseURL)/p/sync\n")
        func failures() throws -> Int {
            let data = try Data(contentsOf: URL(fileURLWithPath: h.root + "/alerts/sync"))
            return try XCTUnwrap((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["failures"] as? Int)
        }

        // The service run fails and jobrun reports it; systemd's OnFailure= then runs
        // notify-failure for the same service run.
        let run = try ChildProcess(h.binary, h.arguments(["run", "sync", "--scheduled"]), environment: ["INVOCATION_ID": "0123abcd"])
        XCTAssertEqual(run.wait(), 69, run.stderr)
        XCTAssertEqual(pings.paths, ["/p/sync/start", "/p/sync/fail"])
        let notify = try ChildProcess(h.binary, h.arguments(["notify-failure", "sync"]), environment: ["MONITOR_INVOCATION_ID": "0123abcd"])
        XCTAssertEqual(notify.wait(), 0, notify.stderr)
        XCTAssertEqual(pings.paths, ["/p/sync/start", "/p/sync/fail"], "no second /fail ping for the same failure")
        XCTAssertEqual(try failures(), 1, "counted once")

        // A service run jobrun never reported (killed by TimeoutStartSec=) is counted and pinged.
        let killed = try ChildProcess(h.binary, h.arguments(["notify-failure", "sync"]), environment: ["MONITOR_INVOCATION_ID": "4567ef00"])
        XCTAssertEqual(killed.wait(), 0, killed.stderr)
        XCTAssertEqual(pings.paths.last, "/p/sync/fail")
        XCTAssertEqual(pings.paths.count, 3)
        XCTAssertEqual(try failures(), 2)
    }

    func testASlowHeartbeatEndpointKeepsAFinishedRunAliveNoLongerThanHeartbeatTimeout() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("quick")
        let baselineStart = Date()
        XCTAssertEqual(try h.run(["run", "quick"]).status, 0)
        let baseline = Date().timeIntervalSince(baselineStart)

        // Accepts, reads, never answers: every attempt would wait its whole timeout.
        let silent = try LoopbackListener { fd in LoopbackListener.waitForClose(fd) }
        defer { silent.stop() }
        try h.writeJob("slow", "name: slow\nkind: time-based-cleanup\nheartbeat: \(silent.baseURL)/ping/s\nheartbeatTimeout: 3s\nparams:\n  maxSize: 1GiB\n")
        let begin = Date()
        let slow = try h.run(["run", "slow", "--scheduled"])
        let elapsed = Date().timeIntervalSince(begin)
        XCTAssertEqual(slow.status, 0, slow.stderr)
        // Before the bound: 2 pings × (3 attempts × 3 s + 1.5 s of backoff) = 21 s.
        XCTAssertLessThan(elapsed, baseline + 3 + 4, "the pings at the run's end share one heartbeatTimeout (3 s); baseline \(baseline) s")
        print("slow heartbeat: run took \(String(format: "%.2f", elapsed)) s, without heartbeat \(String(format: "%.2f", baseline)) s")
        XCTAssertTrue(h.logEvents().contains { $0["event"] as? String == "heartbeat.failed" && $0["job"] as? String == "slow" })
    }

    func testInvalidEnvironmentValuesFailLikeInvalidFileValues() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        XCTAssertEqual(try h.run(["run", "tidy"]).status, 0)
        let secret = "hc-secret-ping-key"
        let heartbeat = try ChildProcess(h.binary, h.arguments(["run", "tidy"]), environment: ["JOBRUN_HEARTBEAT": "ftp://example.com/\(secret)"])
        XCTAssertEqual(heartbeat.wait(), 78, heartbeat.stderr)
        XCTAssertTrue(heartbeat.stderr.contains("JOBRUN_HEARTBEAT"), heartbeat.stderr)
        XCTAssertFalse(heartbeat.stderr.contains(secret), "the value is never shown: \(heartbeat.stderr)")
        let format = try ChildProcess(h.binary, h.arguments(["run", "tidy"]), environment: ["JOBRUN_LOG_FORMAT": "xml"])
        XCTAssertEqual(format.wait(), 78, format.stderr)
        // The same mistake as an option is a usage error.
        XCTAssertEqual(try h.run(["run", "tidy", "--log-format", "xml"]).status, 64)
    }

    func testARunSkippedByStartingDeadlineIsInMetricsAndStatus() throws {
        let h = JobrunHarness()
        // Fires on 1 January only: its previous fire is always more than a minute ago.
        try h.writeJob(
            "yearly", "name: yearly\nkind: time-based-cleanup\nschedule: \"0 0 1 1 *\"\nstartingDeadline: 1m\nparams:\n  maxSize: 1GiB\n")
        let missed = try h.run(["run", "yearly", "--scheduled"])
        XCTAssertEqual(missed.status, 0, missed.stderr)
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_yearly.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_runs_total{jobrun_job=\"yearly\",kind=\"time-based-cleanup\",outcome=\"missed\"} 1\n"), metrics)
        let status = try h.run(["status", "--json"])
        XCTAssertEqual(status.status, 0, status.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let run = try XCTUnwrap((object["runs"] as? [[String: Any]])?.first { $0["job"] as? String == "yearly" })
        XCTAssertEqual(run["outcome"] as? String, "skipped")
        XCTAssertTrue((run["message"] as? String)?.contains("startingDeadline") == true, "\(run)")
        let row = try XCTUnwrap((object["jobs"] as? [[String: Any]])?.first { $0["job"] as? String == "yearly" })
        XCTAssertEqual(row["last_outcome"] as? String, "skipped")
    }

    func testUnitsHonoursOrRefusesEveryOptionAndRemovesStaleTimers() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        let out = h.dir.file("units")
        func units(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            let p = try ChildProcess(h.binary, ["units", "--out", out, "--jobs-dir", h.jobsDir] + args)
            return (p.wait(), p.stdout, p.stderr)
        }
        let first = try units(["--root", "/srv/jobrun"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let service = try String(contentsOfFile: out + "/jobrun-tidy.service", encoding: .utf8)
        XCTAssertTrue(service.contains("--root /srv/jobrun --jobs-dir \(h.jobsDir)"), "--root and --jobs-dir go into the units:\n\(service)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: out + "/jobrun-tidy.timer"))

        // The job is disabled: its old timer goes, and nothing printed refers to a missing file.
        try h.writeJob("tidy", "name: tidy\nkind: time-based-cleanup\nenabled: false\nschedule: \"0 3 * * *\"\nparams:\n  maxSize: 1GiB\n")
        let second = try units([])
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/jobrun-tidy.timer"), "the stale timer is removed")
        XCTAssertTrue(second.stdout.contains("removed \(out)/jobrun-tidy.timer"), second.stdout)
        XCTAssertTrue(second.stdout.contains("sudo systemctl disable --now jobrun-tidy.timer"), second.stdout)
        XCTAssertFalse(second.stdout.contains("*.timer"), "no glob that matches nothing: \(second.stdout)")
        XCTAssertFalse(second.stdout.contains("enable --now"), second.stdout)
        // The printed install line works as printed (into a scratch directory).
        let install = try XCTUnwrap(second.stdout.split(separator: "\n").first { $0.contains("install -m 0644") })
        let scratch = h.dir.file("etc")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let line = install.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "sudo ", with: "")
            .replacingOccurrences(of: "/etc/systemd/system/", with: scratch + "/")
        XCTAssertEqual(try ChildProcess.run("/bin/sh", ["-c", line]).status, 0, line)

        // A file the generator did not write is left alone.
        try "[Timer]\n".write(toFile: out + "/jobrun-mine.timer", atomically: true, encoding: .utf8)
        XCTAssertEqual(try units([]).status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: out + "/jobrun-mine.timer"))

        // Options of the other mode are refused, not ignored.
        for (args, word) in [
            (["--kubernetes", "--root", "/srv/jobrun"], "--root"), (["--kubernetes", "--template"], "--template"), (["--image", "x"], "--image"),
            (["--unit-root", "relative"], "absolute"),
        ] {
            let refused = try units(args)
            XCTAssertEqual(refused.status, 64, "\(args): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains(word), "\(args): \(refused.stderr)")
        }

        // Kubernetes: the disabled job's CronJob is suspended.
        let kube = try units(["--kubernetes"])
        XCTAssertEqual(kube.status, 0, kube.stderr)
        let manifest = try String(contentsOfFile: out + "/jobrun-tidy.yaml", encoding: .utf8)
        XCTAssertTrue(manifest.contains("\n  suspend: true\n"), manifest)
    }

    func testALogFileInANonDirectoryNamesTheLogFilesFolder() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        let plain = h.dir.file("plain")
        try "x".write(toFile: plain, atomically: true, encoding: .utf8)
        let result = try h.run(["run", "tidy", "--log-file", plain + "/run.log"])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("log file's folder \(plain)"), result.stderr)
        XCTAssertFalse(result.stderr.contains("cannot use the data root"), result.stderr)
    }
}
