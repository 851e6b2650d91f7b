import CloudCore
import ConfinedFiles
import Foundation

/// Tells someone when a job fails or stops reporting: the job's `onFailure` command and its
/// heartbeat pings, with `$JOBRUN_ON_FAILURE` and `$JOBRUN_HEARTBEAT` as defaults for jobs that
/// set neither.
///
/// - Heartbeat: `start` when a run starts (sent in the background: a slow endpoint never delays
///   the work), then `success` or `fail` when it ends. Each ping has up to `pingAttempts`
///   attempts within the job's `heartbeatTimeout` in total, and the pings at a run's end (the
///   wait for an unfinished start ping, then the final ping) share one `heartbeatTimeout`: a
///   finished run's process outlives its work by at most that long (10 s by default), however
///   slow the endpoint. A ping that cannot be delivered in time is logged (`heartbeat.failed`,
///   with the redacted URL) and never fails the run.
/// - Failure hook: `/bin/sh -c <command>` with `JOBRUN_JOB`, `JOBRUN_KIND`, `JOBRUN_RUN_ID`,
///   `JOBRUN_OUTCOME`, `JOBRUN_EXIT_CODE`, `JOBRUN_MESSAGE`, `JOBRUN_FAILURES` (consecutive
///   failures so far) in its environment, at most `hookTimeout` long. It runs for the first
///   failure of a streak only: `<root>/alerts/<job>` remembers an alerted streak until a run
///   succeeds, so a job failing every 5 minutes alerts once, not every 5 minutes.
public struct RunAlerts: Sendable {
    public let root: DataRoot
    public let logger: JobLogger
    /// `$JOBRUN_ON_FAILURE`: the failure hook of jobs without `onFailure`.
    public var defaultOnFailure: String?
    /// `$JOBRUN_HEARTBEAT` (may contain `{job}`): the heartbeat of jobs without `heartbeat`.
    public var defaultHeartbeat: String?
    /// Why an alert variable of the environment is unusable (the process must stop with 78, as
    /// for the same value in a job file), or nil. Never holds the value: a heartbeat URL holds a
    /// secret.
    public let environmentProblem: String?
    public static let pingAttempts = 3
    public static let hookTimeout: Duration = .seconds(60)

    public init(root: DataRoot, logger: JobLogger, environment: [String: String] = LaunchEnvironment.variables) {
        self.root = root
        self.logger = logger
        func variable(_ param: any JobParameter) -> String? { param.spec.environment.flatMap { environment[$0] } }
        defaultOnFailure = variable(JobFileSection.onFailure).flatMap { $0.isEmpty ? nil : $0 }
        let heartbeat = variable(JobFileSection.heartbeat).flatMap { $0.isEmpty ? nil : $0 }
        if let heartbeat, !HeartbeatURL.isValid(heartbeat) {
            defaultHeartbeat = nil
            environmentProblem =
                "$\(JobFileSection.heartbeat.spec.environment ?? "") is not an absolute http:// or https:// URL with a host and no spaces (its value is not shown: it may hold a ping key)"
        } else {
            defaultHeartbeat = heartbeat
            environmentProblem = nil
        }
    }

    public func heartbeat(for job: JobFile) -> HeartbeatURL? {
        (job.heartbeat ?? defaultHeartbeat).map { HeartbeatURL($0, job: job.name) }
    }

    /// Sends the start ping in the background; await the task before the final ping.
    public func started(_ job: JobFile, runId: String) -> Task<Void, Never>? {
        guard let heartbeat = heartbeat(for: job) else { return nil }
        let log = logger.with(job: job.name, run: runId)
        let timeout = job.heartbeatTimeout
        return Task { await Self.ping(heartbeat, .start, deadline: .now + timeout, log: log) }
    }

    /// The end of a run: the final ping, and the failure hook for the first failure of a streak.
    public func finished(_ job: JobFile, result: RunResult, start: Task<Void, Never>?) async {
        let log = logger.with(job: job.name, run: result.runId)
        let deadline = ContinuousClock.now + job.heartbeatTimeout
        if let start {
            await Self.until(deadline) { await start.value }
            start.cancel()
        }
        let failed = result.outcome == .failed || result.outcome == .timedOut
        if let heartbeat = heartbeat(for: job), result.outcome != .cancelled {
            await Self.ping(heartbeat, failed ? .fail : .success, deadline: deadline, log: log)
        }
        if result.outcome == .succeeded {
            if let streak = AlertState(root: root, job: job.name).clear() {
                log.notice("alert.recovered", ["failures": .int(Int64(streak)), "msg": .string("\(job.name) succeeded after \(streak) failed runs")])
            }
            return
        }
        guard failed else { return }
        await alert(
            job, outcome: result.outcome.rawValue, exitCode: result.exitCode.rawValue, runId: result.runId,
            message: result.message ?? "", log: log)
        // systemd's `OnFailure=` will run `notify-failure` for this same failure: it must find it
        // reported. `$INVOCATION_ID` is the service run's id, which systemd hands the failure
        // unit as `$MONITOR_INVOCATION_ID`.
        AlertState(root: root, job: job.name).markReported(invocation: LaunchEnvironment.variables["INVOCATION_ID"] ?? "")
    }

    /// `jobrun notify-failure`: the job's service failed in a way jobrun may not have seen (killed
    /// by systemd's timeout, the OOM killer, a crash). A failure jobrun reported itself is not
    /// counted or pinged again: the service run `invocation` (systemd's
    /// `$MONITOR_INVOCATION_ID`) is the one jobrun reported, or, without an id, jobrun reported a
    /// failure that no `notify-failure` has claimed yet. Otherwise it counts the failure, pings
    /// `/fail`, and runs the hook unless this streak was already alerted.
    public func unitFailed(_ job: JobFile, invocation: String? = LaunchEnvironment.variables["MONITOR_INVOCATION_ID"]) async {
        let log = logger.with(job: job.name, run: nil)
        let state = AlertState(root: root, job: job.name)
        if let reported = state.takeReported(), invocation.map({ $0.isEmpty || $0 == reported }) ?? true {
            log.info("alert.already_reported", ["msg": .string("\(job.name): jobrun already reported this failure; not counted or pinged again")])
            return
        }
        if let heartbeat = heartbeat(for: job) { await Self.ping(heartbeat, .fail, deadline: .now + job.heartbeatTimeout, log: log) }
        await alert(job, outcome: "unit_failed", exitCode: 1, runId: "", message: "the job's systemd service failed", log: log)
    }

    private func alert(_ job: JobFile, outcome: String, exitCode: Int32, runId: String, message: String, log: JobLogger) async {
        let state = AlertState(root: root, job: job.name)
        let (failures, alreadyAlerted) = state.recordFailure()
        guard let command = job.onFailure ?? defaultOnFailure else { return }
        if alreadyAlerted {
            log.info(
                "alert.suppressed",
                ["failures": .int(Int64(failures)), "msg": .string("\(job.name) failed again (\(failures) in a row): already alerted, hook not run")])
            return
        }
        let environment = [
            "JOBRUN_JOB": job.name, "JOBRUN_KIND": job.kind, "JOBRUN_RUN_ID": runId, "JOBRUN_OUTCOME": outcome,
            "JOBRUN_EXIT_CODE": String(exitCode), "JOBRUN_MESSAGE": message, "JOBRUN_FAILURES": String(failures),
        ]
        let status = await FailureHook.run(command, environment: environment, timeout: Self.hookTimeout)
        state.markAlerted()
        // The command itself may hold a token: it is never logged.
        log.log(
            status == 0 ? .notice : .error, "alert.hook_finished",
            ["exit_status": .int(Int64(status)), "msg": .string("\(job.name): failure hook exited \(status)")])
    }

    /// `work`'s result, or nil when it had not finished by `deadline`: work still going then is
    /// left to its cancellation (it must not hold up the caller, nor the process's exit).
    @discardableResult
    static func until<T: Sendable>(_ deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () async -> T) async -> T? {
        let (ended, continuation) = AsyncStream<T?>.makeStream()
        let worker = Task {
            continuation.yield(await work())
            continuation.finish()
        }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            continuation.yield(nil)
            continuation.finish()
        }
        var result: T?
        for await value in ended {
            result = value
            break
        }
        worker.cancel()
        timer.cancel()
        return result
    }

    /// One ping with retries, all of it over by `deadline`; never throws.
    static func ping(_ heartbeat: HeartbeatURL, _ signal: HeartbeatURL.Signal, deadline: ContinuousClock.Instant, log: JobLogger) async {
        let answer = await until(deadline) { () -> (delivered: Bool, error: String) in
            var configuration = TransportConfiguration()
            configuration.connectTimeout = max(0.05, ContinuousClock.now.duration(to: deadline).jobSeconds)
            guard let transport = try? CurlTransport(configuration: configuration) else { return (false, "no HTTP transport") }
            var lastError = "no attempt within heartbeatTimeout"
            for attempt in 1...pingAttempts {
                let seconds = ContinuousClock.now.duration(to: deadline).jobSeconds
                guard seconds >= 0.05, !Task.isCancelled else { break }
                do {
                    let response = try await transport.send(HTTPRequest(url: heartbeat.url(signal), timeout: seconds))
                    if (200..<300).contains(response.status) { return (true, "") }
                    lastError = "HTTP \(response.status)"
                } catch {
                    lastError = LogRedaction.redactString("\(error)").replacingOccurrences(of: heartbeat.base, with: heartbeat.redacted)
                }
                if attempt < pingAttempts, (try? await Task.sleep(for: .milliseconds(500 * attempt))) == nil { break }
            }
            return (false, lastError)
        }
        let (delivered, lastError) = answer ?? (false, "no answer within heartbeatTimeout")
        if delivered {
            log.debug("heartbeat.sent", ["signal": .string(signal.rawValue), "endpoint": .string(heartbeat.redacted)])
            return
        }
        log.warning(
            "heartbeat.failed",
            [
                "signal": .string(signal.rawValue), "endpoint": .string(heartbeat.redacted), "error": .string(lastError),
                "msg": .string("heartbeat \(signal.rawValue) ping to \(heartbeat.redacted) not delivered within heartbeatTimeout: \(lastError)"),
            ])
    }
}

/// `<root>/alerts/<job>`: the failure streak of a job and whether it was alerted, so a hook runs
/// once per streak. One small JSON file, replaced atomically.
struct AlertState {
    let root: DataRoot
    let job: String

    private var name: String { JobSuspension.fileName(job) }

    private struct Stored {
        var failures = 0
        var alerted = false
        /// The service run (`$INVOCATION_ID`, empty when unknown) whose failure jobrun reported
        /// and no `notify-failure` has claimed yet.
        var reported: String?
    }

    /// `alerts/`, reached beneath the root: a link or an unsafe folder there is never used.
    private func directory(create: Bool) -> ConfinedDirectory? { try? root.directory(["alerts"], create: create) }

    private func read() -> Stored? {
        // No file (the usual case: no failure streak) costs one `open`, not a FileManager.
        guard let directory = directory(create: false), let values = RunStateFile.read(name, in: directory, as: AlertStateSection.self) else {
            return nil
        }
        return Stored(
            failures: values[AlertStateSection.failures], alerted: values[AlertStateSection.alerted], reported: values[AlertStateSection.reported])
    }

    private func write(_ stored: Stored) {
        guard let directory = directory(create: true) else { return }
        var fields: [String: LogValue] = ["job": .string(job), "failures": .int(Int64(stored.failures)), "alerted": .bool(stored.alerted)]
        if let reported = stored.reported { fields["reported"] = .string(reported) }
        let text = JSONLine.encode(.object(fields)) + "\n"
        try? MetricsWriter.atomicWrite(text, in: directory.descriptor, name: name, directoryPath: directory.path, mode: 0o600)
    }

    /// Counts one more failure; returns the streak and whether it was already alerted.
    func recordFailure() -> (Int, Bool) {
        var stored = read() ?? Stored()
        let alerted = stored.alerted
        stored.failures += 1
        stored.reported = nil
        write(stored)
        return (stored.failures, alerted)
    }

    func markAlerted() {
        var stored = read() ?? Stored(failures: 1)
        stored.alerted = true
        write(stored)
    }

    /// Notes that jobrun reported the failure of service run `invocation` itself.
    func markReported(invocation: String) {
        var stored = read() ?? Stored(failures: 1)
        stored.reported = invocation
        write(stored)
    }

    /// The service run whose reported failure no `notify-failure` claimed yet, claiming it.
    func takeReported() -> String? {
        guard var stored = read(), let reported = stored.reported else { return nil }
        stored.reported = nil
        write(stored)
        return reported
    }

    /// Ends a streak; returns its length when there was one.
    func clear() -> Int? {
        guard let previous = read(), let directory = directory(create: false) else { return nil }
        _ = try? directory.removeFile(name)
        return previous.failures
    }
}
