import Foundation
import Postbox
import TestSupport
import XCTest

/// The unattended path as cron, a systemd timer or a container runs it: the built `jobrun` with
/// stdout and stderr on pipes (never a TTY), on a real data root.
final class UnattendedRunTests: XCTestCase {
    func testScheduledSuccessAndOverlapPrintNothingAndAFailurePrintsOneStderrLine() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        let quiet = try h.run(["run", "cleanup", "--scheduled"])
        XCTAssertEqual(quiet.status, 0, quiet.stderr)
        XCTAssertEqual(quiet.stdout, "", "a successful scheduled run prints nothing (cron sends no mail)")
        XCTAssertEqual(quiet.stderr, "")

        let holder = try h.start(["run", "cleanup"], failpoints: "after-lock=sleep(60000)")
        defer {
            holder.signal(SIGKILL)
            holder.wait()
        }
        let lockFile = h.root + "/locks/cleanup.lock"
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, (try? String(contentsOfFile: lockFile, encoding: .utf8))?.contains("\(holder.pid)") != true { usleep(50_000) }
        let overlap = try h.run(["run", "cleanup", "--scheduled"])
        XCTAssertEqual(overlap.status, 75, "the overlap keeps its exit code for systemd and scripts: \(overlap.stderr)")
        XCTAssertEqual(overlap.stdout, "", "an overlapped scheduled run prints nothing")
        XCTAssertEqual(overlap.stderr, "", "an overlap is the lock doing its job, not a failure to mail about")
        let byHand = try h.runOnTerminal(["run", "cleanup"])
        XCTAssertEqual(byHand.status, 75)
        XCTAssertTrue(byHand.output.contains("already running"), "a person at a terminal still hears about it: \(byHand.output)")

        // A job that fails: its cloud is a closed port.
        try FileManager.default.createDirectory(atPath: h.account, withIntermediateDirectories: true)
        try "datacenters:\n  1: http://127.0.0.1:9\ncdn: http://127.0.0.1:9\nmainDc: 1\n".write(
            toFile: h.account + "/config.yaml", atomically: true, encoding: .utf8)
        try h.writeJob("sync", "name: sync\nkind: sync-history\ntimeout: 60s\nretry:\n  backoffLimit: 0\n")
        let failed = try h.run(["run", "sync", "--scheduled"])
        XCTAssertNotEqual(failed.status, 0)
        XCTAssertEqual(failed.stdout, "", "a failure prints nothing on stdout")
        let lines = failed.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one stderr line for cron's mail: \(failed.stderr)")
        XCTAssertTrue(lines.first?.hasPrefix("jobrun: sync failed (exit \(failed.status), run ") == true, failed.stderr)

        let loud = try h.run(["run", "cleanup", "--scheduled", "-v"])
        XCTAssertEqual(loud.status, 75)
        let spoken = try h.run(["run", "sync", "--scheduled", "-v"])
        XCTAssertTrue(spoken.stdout.contains("sync ["), "-v prints the summary even when scheduled: \(spoken.stdout)")
        let hushed = try h.run(["run", "sync", "-q"])
        XCTAssertEqual(hushed.stdout, "", "-q is as quiet as --scheduled")
        XCTAssertEqual(hushed.stderr.split(separator: "\n").count, 1, hushed.stderr)
    }

    /// Without --scheduled, what decides is whether stdout is a terminal: on a pipe (a script, a
    /// container's log) a success prints nothing, on a terminal the summary; a dry run prints what
    /// it would do either way, and -v or --json make a piped run talk.
    func testAPlainRunIsQuietOnAPipeAndTalksOnATerminal() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        let piped = try h.run(["run", "cleanup"])
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(piped.stdout + piped.stderr, "", "a success on a pipe prints nothing")

        let terminal = try h.runOnTerminal(["run", "cleanup"])
        XCTAssertEqual(terminal.status, 0, terminal.output)
        XCTAssertTrue(terminal.output.contains("cleanup ["), "on a terminal the summary shows: \(terminal.output)")
        XCTAssertTrue(terminal.output.contains(": ok in "), terminal.output)
        let hushed = try h.runOnTerminal(["run", "cleanup", "-q"])
        XCTAssertEqual(hushed.status, 0, hushed.output)
        XCTAssertEqual(hushed.output, "", "-q hushes a run on a terminal")

        let dry = try h.run(["run", "cleanup", "--dry-run"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertTrue(dry.stdout.contains("(dry run)"), "a dry run's output is the point, even on a pipe: \(dry.stdout)")
        let loud = try h.run(["run", "cleanup", "-v"])
        XCTAssertTrue(loud.stdout.contains("cleanup ["), "-v prints the summary on a pipe: \(loud.stdout)")
        let json = try h.run(["run", "cleanup", "--json"])
        XCTAssertEqual((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["outcome"] as? String, "succeeded", json.stdout)
    }

    func testADryRunLeavesTheMetricsFileByteIdenticalAndIsRecordedAsADryRun() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0)
        let prom = h.root + "/metrics/jobrun_cleanup.prom"
        let before = try Data(contentsOf: URL(fileURLWithPath: prom))
        Thread.sleep(forTimeInterval: 1.1)  // a rewritten file would carry other timestamps
        let dry = try h.run(["run", "cleanup", "--dry-run", "--json"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        let result = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any], dry.stdout)
        XCTAssertEqual(result["dry_run"] as? Bool, true)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: prom)), before, "a dry run does not touch the metrics file")

        let postbox = try h.accountPostbox()
        let runs = try postbox.readSync { try $0.jobRuns.recent(job: "cleanup", limit: 10) }
        XCTAssertEqual(runs.count, 2)
        XCTAssertEqual(runs.filter(\.dryRun).count, 1, "the dry run is recorded as one")
        XCTAssertEqual(runs.first { $0.dryRun }?.runId, result["run"] as? String)
        let status = try h.run(["status"])
        XCTAssertTrue(status.stdout.contains("dry run"), "status tells the dry run from a real one: \(status.stdout)")
    }

    func testDryRunsAndTheDefaultRootCreateNoRoot() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        let missing = h.dir.file("no-such-root")
        let dry = try ChildProcess(h.binary, ["run", "cleanup", "--dry-run", "--root", missing, "--jobs-dir", h.jobsDir])
        XCTAssertEqual(dry.wait(), 66, dry.stderr)
        XCTAssertTrue(dry.stderr.contains(missing) && dry.stderr.contains("dry run"), dry.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing), "a dry run creates no root")

        let cwd = h.dir.file("cwd")
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        let plain = try ChildProcess(h.binary, ["run", "cleanup", "--jobs-dir", h.jobsDir], environment: ["JOBRUN_ROOT": ""], currentDirectory: cwd)
        XCTAssertEqual(plain.wait(), 66, plain.stderr)
        XCTAssertTrue(plain.stderr.contains("--root") && plain.stderr.contains("JOBRUN_ROOT"), plain.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: cwd + "/data"), "no ./data appears in the working directory")
        for command in [["status"], ["stats"]] {
            let p = try ChildProcess(h.binary, command + ["--jobs-dir", h.jobsDir], environment: ["JOBRUN_ROOT": ""], currentDirectory: cwd)
            XCTAssertEqual(p.wait(), 66, "\(command): \(p.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: cwd + "/data"), "\(command) creates nothing")
        }
    }

    func testDisabledAndPausedJobsAreSkippedByScheduledRunsScheduleAndUnits() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("active")
        try h.writeCleanupJob("held")
        try h.writeJob(
            "dormant",
            """
            name: dormant
            kind: time-based-cleanup
            enabled: false
            schedule: "0 3 * * *"
            params:
              maxSize: 1GiB
            """)
        XCTAssertEqual(try h.run(["run", "active"]).status, 0)  // creates the root

        let disabled = try h.run(["run", "dormant", "--scheduled"])
        XCTAssertEqual(disabled.status, 0, disabled.stderr)
        XCTAssertEqual(disabled.stdout + disabled.stderr, "")

        let pause = try h.run(["pause", "held", "--note", "maintenance"])
        XCTAssertEqual(pause.status, 0, pause.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: h.root + "/suspended/held"))
        let paused = try h.run(["run", "held", "--scheduled"])
        XCTAssertEqual(paused.status, 0, paused.stderr)
        XCTAssertEqual(paused.stdout + paused.stderr, "")
        let typo = try h.run(["pause", "helt"])
        XCTAssertEqual(typo.status, 64)
        XCTAssertTrue(typo.stderr.contains("did you mean 'held'"), typo.stderr)

        let suspended = h.logEvents().filter { $0["event"] as? String == "run.suspended" }
        XCTAssertEqual(Set(suspended.compactMap { $0["job"] as? String }), ["dormant", "held"])
        XCTAssertTrue(suspended.allSatisfy { ($0["msg"] as? String)?.contains("not run") == true }, "\(suspended)")
        let postbox = try h.accountPostbox()
        XCTAssertEqual(try postbox.readSync { try $0.jobRuns.jobNames() }, ["active"], "suspended jobs did not run")

        // schedule --now starts every enabled job at once: the paused one is skipped.
        let scheduler = try h.start(["schedule", "--now"])
        let until = Date().addingTimeInterval(120)
        func finished(_ job: String) -> Bool {
            h.logEvents().contains { $0["job"] as? String == job && $0["event"] as? String == "run.finished" && $0["process"] as? String == "scheduler" }
        }
        while Date() < until, !finished("active") { usleep(100_000) }
        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(), 0, scheduler.stderr)
        let schedulerEvents = h.logEvents().filter { $0["process"] as? String == "scheduler" }
        XCTAssertTrue(finished("active"))
        XCTAssertTrue(schedulerEvents.contains { $0["job"] as? String == "held" && $0["event"] as? String == "run.suspended" })
        XCTAssertFalse(schedulerEvents.contains { $0["job"] as? String == "held" && $0["event"] as? String == "run.started" })
        XCTAssertFalse(schedulerEvents.contains { $0["job"] as? String == "dormant" && $0["event"] as? String == "run.started" })

        XCTAssertEqual(try h.run(["resume", "held"]).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.root + "/suspended/held"))
        let resumed = try h.run(["run", "held", "--scheduled"])
        XCTAssertEqual(resumed.status, 0)
        XCTAssertTrue(try postbox.readSync { try $0.jobRuns.jobNames() }.contains("held"), "a resumed job runs again")

        let out = h.dir.file("units")
        XCTAssertEqual(try h.run(["units", "--out", out]).status, 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: out)
        XCTAssertTrue(files.contains("jobrun-active.timer"))
        XCTAssertFalse(files.contains("jobrun-dormant.timer"), "a disabled job gets no timer: \(files)")
    }

    func testWrongJobsDirectoriesFailWithTheFix() throws {
        let h = JobrunHarness(root: .plaintext)  // no root yet: the test checks that none is created
        let missing = h.dir.file("nowhere")
        for command in [["validate"], ["list"], ["units", "--out", h.dir.file("u")], ["schedule"], ["run", "x"]] {
            let p = try ChildProcess(h.binary, command + ["--root", h.root, "--jobs-dir", missing])
            XCTAssertEqual(p.wait(), 66, "\(command): \(p.stderr)")
            XCTAssertTrue(p.stderr.contains("\(missing) does not exist") && p.stderr.contains("--jobs-dir"), "\(command): \(p.stderr)")
        }
        // A path with `..` and a trailing slash is named in its standard form.
        let dotted = try ChildProcess(h.binary, ["run", "x", "--root", h.root, "--jobs-dir", h.dir.file("elsewhere") + "/../nowhere/"])
        XCTAssertEqual(dotted.wait(), 66, dotted.stderr)
        XCTAssertTrue(dotted.stderr.contains("jobs directory \(missing) does not exist"), dotted.stderr)
        let empty = h.dir.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let p = try ChildProcess(h.binary, ["validate", "--jobs-dir", empty])
        XCTAssertEqual(p.wait(), 78, p.stderr)
        XCTAssertTrue(p.stderr.contains("no job files"), p.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.root), "nothing was created")

        try h.writeCleanupJob("time-based-cleanup")
        let typo = try h.run(["run", "time-based-clenup"])
        XCTAssertEqual(typo.status, 64)
        XCTAssertTrue(typo.stderr.contains("did you mean 'time-based-cleanup'"), typo.stderr)
        let command = try ChildProcess(h.binary, ["stauts"])
        XCTAssertEqual(command.wait(), 64)
        XCTAssertTrue(command.stderr.contains("unknown command 'stauts'; did you mean ") && command.stderr.contains("'status'"), command.stderr)
        let version = try ChildProcess(h.binary, ["--version"])
        XCTAssertEqual(version.wait(), 0)
        XCTAssertTrue(version.stdout.hasPrefix("jobrun 0.") && version.stdout.contains("swift "), version.stdout)
        // `run` is parsed by its own command first; what that parse refuses gets the full
        // parser's help and errors, which name the command as `jobrun run`.
        let help = try ChildProcess(h.binary, ["run", "--help"])
        XCTAssertEqual(help.wait(), 0)
        XCTAssertTrue(help.stdout.contains("USAGE: jobrun run"), help.stdout)
        let option = try ChildProcess(h.binary, ["run", "time-based-cleanup", "--dryrun"])
        XCTAssertEqual(option.wait(), 64)
        XCTAssertTrue(option.stderr.contains("Did you mean '--dry-run'?") && option.stderr.contains("Usage: jobrun run "), option.stderr)
    }

    func testLogsByConvention() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        // schedule with stderr not a TTY: JSON lines on stderr for journald and containers.
        let scheduler = try h.start(["schedule", "--now"])
        let until = Date().addingTimeInterval(60)
        while Date() < until, !scheduler.stderr.contains("\"event\":\"run.finished\"") { usleep(50_000) }
        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(), 0)
        let lines = scheduler.stderr.split(separator: "\n")
        XCTAssertFalse(lines.isEmpty)
        for line in lines {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line))
            XCTAssertFalse((object["msg"] as? String ?? "").isEmpty, "every event has a human msg: \(line)")
        }
        XCTAssertTrue(scheduler.stderr.contains("\"msg\":\"cleanup finished: succeeded in "), scheduler.stderr)
        for event in h.logEvents() { XCTAssertFalse((event["msg"] as? String ?? "").isEmpty, "\(event)") }

        // A container: stderr only, no file; a level; the environment variables.
        let logs = h.root + "/logs/run-logs/run.log"
        try? FileManager.default.removeItem(atPath: logs)
        let onlyStderr = try h.run(["run", "cleanup", "--log-file", "-"])
        XCTAssertEqual(onlyStderr.status, 0, onlyStderr.stderr)
        XCTAssertTrue(onlyStderr.stderr.contains("\"event\":\"run.finished\""), "JSON lines on stderr: \(onlyStderr.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: logs), "--log-file - writes no file")
        XCTAssertFalse(onlyStderr.stdout.contains("\"event\""), "the events go to stderr, as documented, not stdout: \(onlyStderr.stdout)")
        let text = try ChildProcess(
            h.binary, h.arguments(["run", "cleanup", "--scheduled"]), environment: ["JOBRUN_LOG_FORMAT": "text", "JOBRUN_LOG_LEVEL": "warning"])
        XCTAssertEqual(text.wait(), 0, text.stderr)
        XCTAssertEqual(text.stderr, "", "nothing at warning or above happened")
        let file = h.dir.file("elsewhere/jobrun.log")
        let elsewhere = try h.run(["run", "cleanup", "--log-file", file, "--log-level", "debug"])
        XCTAssertEqual(elsewhere.status, 0, elsewhere.stderr)
        let written = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertTrue(written.contains("\"event\":\"run.finished\""), written)
        let bad = try ChildProcess(h.binary, h.arguments(["run", "cleanup"]), environment: ["JOBRUN_LOG_LEVEL": "loud"])
        XCTAssertEqual(bad.wait(), 78, "a bad variable is configuration, as in a file")
        XCTAssertTrue(bad.stderr.contains("$JOBRUN_LOG_LEVEL 'loud' is not a log level"), bad.stderr)
    }

    func testStatusShowsOneRowPerJobAndVersionedJSON() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("daily")
        try h.writeCleanupJob("paused-one")
        XCTAssertEqual(try h.run(["run", "daily"]).status, 0)
        XCTAssertEqual(try h.run(["run", "daily", "--dry-run"]).status, 0)
        XCTAssertEqual(try h.run(["pause", "paused-one"]).status, 0)
        let text = try h.run(["status"])
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.stdout.split(separator: "\n")
        XCTAssertTrue(lines.first?.hasPrefix("JOB") == true && lines.first?.contains("LAST SUCCESS") == true, text.stdout)
        let daily = try XCTUnwrap(lines.first { $0.hasPrefix("daily ") }, text.stdout)
        XCTAssertTrue(daily.contains("succeeded (dry run)"), "the last run was a dry run, and says so: \(String(daily))")
        let paused = try XCTUnwrap(lines.first { $0.hasPrefix("paused-one ") }, text.stdout)
        XCTAssertTrue(paused.hasSuffix("paused"), String(paused))

        let json = try h.run(["status", "--json"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        XCTAssertEqual(object["version"] as? Int, 1)
        let jobs = try XCTUnwrap(object["jobs"] as? [[String: Any]])
        let row = try XCTUnwrap(jobs.first { $0["job"] as? String == "daily" })
        XCTAssertEqual(row["last_dry_run"] as? Bool, true)
        XCTAssertNotNil(row["last_success"] as? String, "the real run before it is the last success")
        XCTAssertNotNil(row["next_run"] as? String)
        XCTAssertEqual(row["running"] as? Bool, false)
        XCTAssertEqual(jobs.first { $0["job"] as? String == "paused-one" }?["suspended"] as? String, "paused")
        for command in [["list", "--json"], ["validate", "--json"], ["stats", "--json"]] {
            let p = try h.run(command)
            let shape = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(p.stdout.utf8)) as? [String: Any], "\(command): \(p.stdout)")
            XCTAssertEqual(shape["version"] as? Int, 1, "\(command)")
        }
    }
}
