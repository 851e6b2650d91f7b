import ArgumentParser
import Foundation
import Jobs

/// `jobrun run <job>`: one run, as cron or a systemd timer starts it.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job once (by name from --jobs-dir, or a job file path).",
        discussion: """
            With --scheduled (cron, a systemd timer), or when stdout is not a terminal, the run is \
            quiet like any unattended tool: a success, a skipped overlap, a missed start and a \
            suspended job print nothing; a failure prints one line on stderr (cron mails it). A dry \
            run still prints what it would do unless scheduled. -q makes a run on a terminal as \
            quiet; -v prints the summary and the log events anyway; --json prints the result.

            Examples:
              jobrun run sync-history --root /var/lib/jobrun --jobs-dir /etc/jobrun/jobs
              jobrun run time-based-cleanup --dry-run --json
              jobrun run upload-queue --scheduled        # the cron and timer line

            Exit codes: 0 ok (also a scheduled run of a suspended job), 1 job failed, 64 usage, \
            66 no jobs directory or data root, 69 cloud unavailable, 75 another run holds the lock, \
            78 bad configuration.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var logging: LogOptions
    @Argument(help: "Job name or job file path.", completion: jobNameCompletion) var job: String
    @Flag(name: .customLong("dry-run"), help: "Report what would be done; change nothing (no metrics file, no new data root).") var dryRun = false
    @Flag(
        help: """
            Started by a timer or cron on the job's schedule: quiet unless it fails, a suspended job \
            (enabled: false, jobrun pause) is not run, and a catch-up run later than the job's \
            startingDeadline is skipped.
            """)
    var scheduled = false
    @Flag(name: .shortAndLong, help: "Print nothing unless the run fails (then one line on stderr).") var quiet = false
    @Flag(name: .shortAndLong, help: "Print the summary, and the log events on stderr, even with --scheduled or without a terminal.") var verbose = false

    /// Nothing on stdout, one stderr line on failure: asked for, scheduled, or unattended (stdout
    /// is not a terminal, as under cron, systemd or a container) unless it is a dry run, whose
    /// output is the point.
    private var isQuiet: Bool {
        let unattended = isatty(STDOUT_FILENO) != 1 && !dryRun
        return (quiet || scheduled || unattended) && !verbose && !options.json
    }

    /// Runs the job once; a run that does not succeed ends the process with its exit code.
    func run() async throws {
        let jobFile: JobFile
        do { jobFile = try resolveJob() } catch let error as JobResolveError {
            throw fail(error.exitCode, error.description)
        }
        let env = try ProcessEnvironment(options: options, logging: logging, process: "run", console: verbose ? .human : quiet ? .off : .auto, dryRun: dryRun)
        defer { env.close() }
        let log = env.logger.with(job: jobFile.name, run: nil)
        if scheduled, let reason = JobSuspension(root: env.root).suspension(of: jobFile) {
            log.notice("run.suspended", ["reason": .string(reason.word), "msg": .string("\(jobFile.name) not run: \(reason)")])
            await env.runner.recordSuspended(jobFile, log: log)
            if !isQuiet { print("\(jobFile.name): not run — \(reason)") }
            return
        }
        if scheduled, let missed = missedDeadline(jobFile) {
            let due = ISO8601DateFormatter().string(from: missed)
            log.warning("run.missed", ["due": .string(due), "msg": .string("scheduled start \(due) is older than startingDeadline: skipped")])
            await env.runner.recordMissed(jobFile, due: missed, log: log)
            if !isQuiet { print("\(jobFile.name): skipped — its scheduled start (\(due)) is older than startingDeadline") }
            return
        }
        let box = ResultBox()
        let task = Task { [dryRun] in box.result = await env.runner.run(jobFile, dryRun: dryRun) }
        let signals = SignalCancellation(cancelling: task, logger: env.logger)
        await task.value
        withExtendedLifetime(signals) {}
        guard let result = box.result else { throw ExitCode(JobExitCode.jobFailed.rawValue) }
        report(result)
        if result.exitCode != .ok { throw ExitCode(result.exitCode.rawValue) }
    }

    /// A path is loaded as a file (no jobs directory needed); a name needs the jobs directory,
    /// of which only the job's own file is read when it defines the job.
    private func resolveJob() throws -> JobFile {
        let looksLikePath = job.contains("/") || job.hasSuffix(".yaml") || job.hasSuffix(".yml")
        if looksLikePath { return try JobCatalog(jobs: []).resolve(job) }
        if let own = JobCatalog.ownFile(of: job, in: options.jobsDirectory) { return own }
        return try options.catalog().resolve(job)
    }

    /// The fire this scheduled run stands for, if it is older than the job's starting deadline.
    private func missedDeadline(_ job: JobFile, now: Date = Date()) -> Date? {
        guard let deadline = job.startingDeadline, let schedule = job.schedule,
            let due = schedule.previousFire(atOrBefore: now, in: job.effectiveTimeZone)
        else { return nil }
        return now.timeIntervalSince(due) > Double(ConfigDuration.milliseconds(deadline)) / 1000 ? due : nil
    }

    private func report(_ result: RunResult) {
        if options.json {
            var fields: [String: LogValue] = [
                "job": .string(result.job), "run": .string(result.runId), "outcome": .string(result.outcome.rawValue),
                "exit_code": .int(Int64(result.exitCode.rawValue)), "duration_ms": .int(Int64(result.duration * 1000)),
                "attempts": .int(Int64(result.attempts)), "counters": .object(result.report.counters.mapValues { .int($0) }),
                "dry_run": .bool(result.dryRun),
            ]
            if let message = result.message { fields["error"] = .string(message) }
            for (k, v) in result.report.details { fields[k] = v }
            printJSON(.object(fields))
            return
        }
        if isQuiet {
            // A skipped overlap (75) is the lock doing its job, not a failure to mail about.
            guard result.exitCode != .ok, result.outcome != .skipped else { return }
            let why = result.message.map { ": " + $0.split(whereSeparator: \.isNewline).joined(separator: "; ") } ?? ""
            FileHandle.standardError.write(
                Data("jobrun: \(result.job) \(result.outcome.rawValue) (exit \(result.exitCode.rawValue), run \(result.runId))\(why)\n".utf8))
            return
        }
        let status = result.exitCode == .ok ? "ok" : "\(result.outcome.rawValue) (exit \(result.exitCode.rawValue))"
        print("\(result.job) [\(result.runId)]: \(status)\(result.dryRun ? " (dry run)" : "") in \(String(format: "%.2f", result.duration)) s")
        for line in result.report.summary { print("  \(line)") }
        for (k, v) in result.report.counters.sorted(by: { $0.key < $1.key }) { print("  \(k): \(v)") }
        if let message = result.message { FileHandle.standardError.write(Data("jobrun: \(result.job): \(message)\n".utf8)) }
    }
}

/// Carries a result out of a task body (set once, read after the task ends).
final class ResultBox: @unchecked Sendable {
    var result: RunResult?
}
