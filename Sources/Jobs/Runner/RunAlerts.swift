import CloudCore
import Foundation

/// Tells someone when a job fails or stops reporting: the job's `onFailure` command and its
/// heartbeat pings, with `$JOBRUN_ON_FAILURE` and `$JOBRUN_HEARTBEAT` as defaults for jobs that
/// set neither.
///
/// - Heartbeat: `start` when a run starts (sent in the background: a slow endpoint never delays
///   the work), then `success` or `fail` when it ends. Each ping has the job's
///   `heartbeatTimeout` per attempt and `pingAttempts` attempts; a ping that cannot be delivered
///   is logged (`heartbeat.failed`, with the redacted URL) and never fails the run.
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
    public static let pingAttempts = 3
    public static let hookTimeout: Duration = .seconds(60)

    public init(root: DataRoot, logger: JobLogger, environment: [String: String] = LaunchEnvironment.variables) {
        self.root = root
        self.logger = logger
        func variable(_ param: any JobParameter) -> String? { param.spec.environment.flatMap { environment[$0] } }
        defaultOnFailure = variable(JobFileSection.onFailure).flatMap { $0.isEmpty ? nil : $0 }
        defaultHeartbeat = variable(JobFileSection.heartbeat).flatMap { $0.isEmpty || !HeartbeatURL.isValid($0) ? nil : $0 }
    }

    public func heartbeat(for job: JobFile) -> HeartbeatURL? {
        (job.heartbeat ?? defaultHeartbeat).map { HeartbeatURL($0, job: job.name) }
    }

    /// Sends the start ping in the background; await the task before the final ping.
    public func started(_ job: JobFile, runId: String) -> Task<Void, Never>? {
        guard let heartbeat = heartbeat(for: job) else { return nil }
        let log = logger.with(job: job.name, run: runId)
        let timeout = job.heartbeatTimeout
        return Task { await Self.ping(heartbeat, .start, timeout: timeout, log: log) }
    }

    /// The end of a run: the final ping, and the failure hook for the first failure of a streak.
    public func finished(_ job: JobFile, result: RunResult, start: Task<Void, Never>?) async {
        let log = logger.with(job: job.name, run: result.runId)
        await start?.value
        let failed = result.outcome == .failed || result.outcome == .timedOut
        if let heartbeat = heartbeat(for: job), result.outcome != .cancelled {
            await Self.ping(heartbeat, failed ? .fail : .success, timeout: job.heartbeatTimeout, log: log)
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
    }

    /// `jobrun notify-failure`: the job's service failed in a way jobrun may not have seen (killed
    /// by systemd's timeout, the OOM killer, a crash). Alerts unless this streak already was.
    public func unitFailed(_ job: JobFile) async {
        let log = logger.with(job: job.name, run: nil)
        if let heartbeat = heartbeat(for: job) { await Self.ping(heartbeat, .fail, timeout: job.heartbeatTimeout, log: log) }
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

    /// One ping with retries; never throws.
    static func ping(_ heartbeat: HeartbeatURL, _ signal: HeartbeatURL.Signal, timeout: Duration, log: JobLogger) async {
        let seconds = max(0.2, timeout.jobSeconds)
        var configuration = TransportConfiguration()
        configuration.connectTimeout = seconds
        configuration.requestTimeout = seconds
        guard let transport = try? CurlTransport(configuration: configuration) else { return }
        var lastError = ""
        for attempt in 1...pingAttempts {
            do {
                let response = try await transport.send(HTTPRequest(url: heartbeat.url(signal), timeout: seconds))
                if (200..<300).contains(response.status) {
                    log.debug("heartbeat.sent", ["signal": .string(signal.rawValue), "endpoint": .string(heartbeat.redacted)])
                    return
                }
                lastError = "HTTP \(response.status)"
            } catch {
                lastError = LogRedaction.redactString("\(error)").replacingOccurrences(of: heartbeat.base, with: heartbeat.redacted)
            }
            if attempt < pingAttempts, (try? await Task.sleep(for: .milliseconds(500 * attempt))) == nil { break }
        }
        log.warning(
            "heartbeat.failed",
            [
                "signal": .string(signal.rawValue), "endpoint": .string(heartbeat.redacted), "error": .string(lastError),
                "msg": .string("heartbeat \(signal.rawValue) ping to \(heartbeat.redacted) failed after \(pingAttempts) attempts: \(lastError)"),
            ])
    }
}

/// `<root>/alerts/<job>`: the failure streak of a job and whether it was alerted, so a hook runs
/// once per streak. One small JSON file, replaced atomically.
struct AlertState {
    let root: DataRoot
    let job: String

    private var name: String { JobSuspension.fileName(job) }

    private func read() -> (failures: Int, alerted: Bool)? {
        // No file (the usual case: no failure streak) costs one `open`, not a FileManager.
        guard let values = RunStateFile.read(root.alerts.appendingPathComponent(name).path, as: AlertStateSection.self) else { return nil }
        return (values[AlertStateSection.failures], values[AlertStateSection.alerted])
    }

    private func write(failures: Int, alerted: Bool) {
        guard let dirFD = try? root.openDirectory(["alerts"]) else { return }
        defer { close(dirFD) }
        let text = JSONLine.encode(.object(["job": .string(job), "failures": .int(Int64(failures)), "alerted": .bool(alerted)])) + "\n"
        try? MetricsWriter.atomicWrite(text, in: dirFD, name: name, directoryPath: root.alerts.path, mode: 0o600)
    }

    /// Counts one more failure; returns the streak and whether it was already alerted.
    func recordFailure() -> (Int, Bool) {
        let previous = read()
        let failures = (previous?.failures ?? 0) + 1
        write(failures: failures, alerted: previous?.alerted ?? false)
        return (failures, previous?.alerted ?? false)
    }

    func markAlerted() {
        write(failures: read()?.failures ?? 1, alerted: true)
    }

    /// Ends a streak; returns its length when there was one.
    func clear() -> Int? {
        guard let previous = read() else { return nil }
        unlink(root.alerts.appendingPathComponent(name).path)
        return previous.failures
    }
}
