import ArgumentParser
import Foundation
import Jobs

/// What `jobrun run` was asked to do, as plain values, and the run itself. `RunCommand` reads
/// the line into it.
struct RunRequest: Equatable, Sendable {
    var job: String
    var options = GlobalSettings()
    var logging = LogSettings()
    var dryRun = false
    var scheduled = false
    var quiet = false
    var verbose = false

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
        let task = Task { box.result = await env.runner.run(jobFile, dryRun: dryRun) }
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
