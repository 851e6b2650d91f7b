import ArgumentParser
import Foundation
import Jobs

/// `jobrun run <job>`: one run, as cron or a systemd timer starts it.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job once (by name from --jobs-dir, or a job file path).",
        discussion: "Exit codes: 0 ok, 1 job failed, 64 usage, 69 cloud unavailable, 75 another run holds the lock, 78 bad configuration."
    )

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Job name or job file path.") var job: String
    @Flag(name: .customLong("dry-run"), help: "Report what would be done; change nothing.") var dryRun = false
    @Flag(help: "Started by a timer or cron on the job's schedule: a catch-up run later than the job's startingDeadline is skipped.")
    var scheduled = false

    func run() async throws {
        let jobFile: JobFile
        do { jobFile = try options.catalog().resolve(job) } catch {
            throw fail(error.exitCode, error.description)
        }
        let env = try ProcessEnvironment(options: options, process: "run")
        defer { env.close() }
        if scheduled, let missed = missedDeadline(jobFile) {
            env.logger.with(job: jobFile.name, run: nil).warning("run.missed", ["due": .string(ISO8601DateFormatter().string(from: missed))])
            print("\(jobFile.name): skipped — its scheduled start (\(ISO8601DateFormatter().string(from: missed))) is older than startingDeadline")
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
            ]
            if let message = result.message { fields["error"] = .string(message) }
            for (k, v) in result.report.details { fields[k] = v }
            printJSON(.object(fields))
            return
        }
        let status = result.exitCode == .ok ? "ok" : "\(result.outcome.rawValue) (exit \(result.exitCode.rawValue))"
        print("\(result.job) [\(result.runId)]: \(status) in \(String(format: "%.2f", result.duration)) s")
        for line in result.report.summary { print("  \(line)") }
        for (k, v) in result.report.counters.sorted(by: { $0.key < $1.key }) { print("  \(k): \(v)") }
        if let message = result.message { FileHandle.standardError.write(Data("jobrun: \(result.job): \(message)\n".utf8)) }
    }
}

/// Carries a result out of a task body (set once, read after the task ends).
final class ResultBox: @unchecked Sendable {
    var result: RunResult?
}
