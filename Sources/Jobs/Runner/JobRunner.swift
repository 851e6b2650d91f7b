import Foundation
import Postbox

/// Runs one job once, the way cron, a systemd timer, a person or the scheduler start it: takes
/// the job's run lock per its concurrency policy, records the run in each account's Postbox,
/// runs the kind with the job's timeout and retries, and leaves a log trail and a metrics file.
public struct JobRunner: Sendable {
    public let root: DataRoot
    public let kinds: JobKindRegistry
    public let accounts: AccountContextPool
    public let logger: JobLogger
    /// The launch's scratch space, handed to every kind; created only if one uses it.
    public let temp: TempBox
    public let metrics: MetricsWriter
    /// Failure hooks and heartbeat pings (`onFailure`, `heartbeat`); dry runs send none.
    public var alerts: RunAlerts
    /// Runs kept per job in the history table.
    public var historyLimit = 200
    /// Where each run's metrics are pushed as well as written (`--pushgateway`), if anywhere.
    public var pushgateway: Pushgateway?

    public init(root: DataRoot, kinds: JobKindRegistry = .shipped, accounts: AccountContextPool, logger: JobLogger, temp: TempBox) {
        self.root = root
        self.kinds = kinds
        self.accounts = accounts
        self.logger = logger
        self.temp = temp
        self.metrics = MetricsWriter(root: root)
        self.alerts = RunAlerts(root: root, logger: logger)
    }

    /// Runs `job`. Never throws: every failure becomes a `RunResult` with its exit code. A run
    /// that took the lock pings the job's heartbeat at its start and end and, when it fails,
    /// runs the failure hook (not for dry runs). `fire` is the scheduled fire a cluster
    /// scheduler claimed this run for; it is kept in the run's record.
    public func run(_ job: JobFile, dryRun: Bool = false, fire: Date? = nil) async -> RunResult {
        // The run is a task of its own so that losing its lock cancels this run alone, not the
        // process (a scheduler runs others beside it).
        let cancellation = RunCancellation()
        let execution = Task {
            var startPing: Task<Void, Never>?
            let result = await execute(job, dryRun: dryRun, fire: fire, cancellation: cancellation, startPing: &startPing)
            return (result, startPing)
        }
        cancellation.attach { execution.cancel() }
        let (result, startPing) = await withTaskCancellationHandler {
            await execution.value
        } onCancel: {
            execution.cancel()
        }
        if !dryRun, result.outcome != .skipped {
            await alerts.finished(job, result: result, start: startPing)
        }
        return result
    }

    private func execute(
        _ job: JobFile, dryRun: Bool, fire: Date?, cancellation: RunCancellation, startPing: inout Task<Void, Never>?
    ) async -> RunResult {
        let runId = Self.makeRunId()
        let log = logger.with(job: job.name, run: runId)
        let started = Date()
        var result = RunResult(
            job: job.name, runId: runId, outcome: .failed, exitCode: .jobFailed, attempts: 0,
            started: started, finished: started, report: JobReport(), message: nil, dryRun: dryRun)
        guard let kind = kinds.kind(named: job.kind) else {
            result.end(.failed, .config, "job kind \(job.kind) is not available in this build")
            log.error("run.refused", ["reason": .string(result.message!)])
            return result
        }

        // 1. The run lock: a file lock on this host, a cluster lock when the store is shared.
        let fileLock = JobLock(root: root, job: job.name)
        let lock: any RunLock
        do { lock = try Self.runLock(root: root, job: job, fileLock: fileLock) } catch {
            result.end(.failed, error.exitCode, error.message)
            log.error("run.refused", ["reason": .string(error.message)])
            return result
        }
        defer { lock.release() }
        lock.whenLost { cancellation.cancel() }
        if let refusal = await acquire(lock, fileLock: fileLock, job: job, dryRun: dryRun, log: log) {
            result.end(refusal.outcome, refusal.exitCode, refusal.message)
            return result
        }

        let origin = RunOrigin(
            host: lock is ClusterRunLock ? ProcessInfo.processInfo.hostName : RunOrigin.localHost,
            fireAt: fire.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) })

        // 2. The accounts' stores and the start record.
        if !dryRun { startPing = alerts.started(job, runId: runId) }
        log.info(
            "run.started",
            [
                "kind": .string(job.kind), "accounts": .array(job.accounts.map { .int($0) }), "dry_run": .bool(dryRun),
                "params": LogValue(job.params), "msg": .string(Self.startedMessage(job, dryRun: dryRun)),
            ])
        let contexts: [AccountContext]
        do {
            contexts = try await openAccounts(job, kind: kind)
        } catch {
            let failure = StorageFailure.jobError(error, doing: "cannot open the stores of the job's accounts")
            result.end(.failed, failure.exitCode, failure.message)
            log.error("run.failed", ["error": .string(failure.message)])
            result.finished = Date()
            return result
        }
        let startFailure = await recordStart(
            contexts, job: job, fileLock: fileLock, runId: runId, started: started, origin: origin, dryRun: dryRun, log: log)
        // A cancelled sleep here leaves the run cancelled: its first attempt finds it so and
        // does not start the kind.
        try? await Failpoints.hit("after-start-record")

        // 3. The work, per account, with timeout and retries.
        let attempts = await work(job, kind: kind, contexts: contexts, runId: runId, dryRun: dryRun, startFailure: startFailure, log: log, result: &result)

        // 4. The record, the metrics and the log line.
        await finish(
            job, contexts: contexts, fileLock: fileLock, runId: runId, started: started, origin: origin, attempts: attempts, dryRun: dryRun, log: log,
            result: &result)
        await accounts.release(job.accounts)
        return result
    }

    /// Why a run did not start: the lock is held under Forbid (75), cannot be used (a planted
    /// link, a read-only root), or the wait for it was cancelled.
    private struct Refusal {
        var outcome: RunOutcome
        var exitCode: JobExitCode
        var message: String?
    }

    /// Takes the run lock as the job's concurrency policy says; nil when the run may start.
    private func acquire(_ lock: any RunLock, fileLock: JobLock, job: JobFile, dryRun: Bool, log: JobLogger) async -> Refusal? {
        do {
            if !(try await takeLock(lock, job: job, log: log)) {
                let holder = lock.holderDescription.map { " (\($0))" } ?? ""
                let message = "job \(job.name) is already running\(holder); concurrencyPolicy \(job.concurrencyPolicy.rawValue): not starting another"
                let pid = lock === fileLock ? fileLock.holderPid : nil
                log.warning("run.skipped", ["reason": .string(message), "holder_pid": pid.map { .int(Int64($0)) } ?? .null])
                if !dryRun { await countNonRun(job, outcome: RunOutcome.skipped.rawValue, log: log) }
                return Refusal(outcome: .skipped, exitCode: .temporary, message: message)
            }
            try await Failpoints.hit("after-lock")
            return nil
        } catch let error as JobError {
            log.error("run.refused", ["reason": .string(error.message)])
            return Refusal(outcome: .failed, exitCode: error.exitCode, message: error.message)
        } catch {
            return Refusal(outcome: .cancelled, exitCode: .temporary, message: "\(error)")
        }
    }

    /// The shared stores of every account of the job (a cloud kind's config checked first),
    /// held open until `accounts.release(job.accounts)`.
    private func openAccounts(_ job: JobFile, kind: any JobKind) async throws -> [AccountContext] {
        try await accounts.lease(job.accounts, cloud: kind.usesCloud)
    }

    /// Closes runs a crashed holder left open, records this run's start in every account, and
    /// returns the first store failure met doing so.
    private func recordStart(
        _ contexts: [AccountContext], job: JobFile, fileLock: JobLock, runId: String, started: Date, origin: RunOrigin, dryRun: Bool, log: JobLogger
    ) async -> (any Error)? {
        // A run that could not write its closing record left its outcome in the lock file.
        let pending = fileLock.pendingOutcome()
        var closedAll = true
        var startFailure: (any Error)?
        let start = Self.runRecord(job: job, runId: runId, started: started, origin: origin, attempt: 1, dryRun: dryRun, end: nil)
        for context in contexts {
            if job.concurrencyPolicy != .allow {
                // Closing abandoned runs and recording this one's start share one transaction
                // (one trip to the store's queue, one commit). Should it fail, each is tried on
                // its own, as they always were, so that each failure is logged for what it is.
                let name = job.name
                let kind = job.kind
                if let closed = try? await context.postbox.transaction({ tx -> [String] in
                    let closed = try Self.closeAbandonedRuns(tx, job: name, kind: kind, pending: pending)
                    try tx.jobRuns.set(start)
                    return closed
                }) {
                    Self.logAbandoned(closed, pending: pending, log: log)
                    continue
                }
                closedAll = await closeAbandonedRuns(context, job: job, pending: pending, log: log) && closedAll
            }
            if let error = await record(context, job: job, runId: runId, started: started, origin: origin, attempt: 1, dryRun: dryRun, end: nil) {
                startFailure = startFailure ?? error
            }
        }
        if pending != nil, closedAll { fileLock.clearPendingOutcome() }
        return startFailure
    }

    /// Attempts the work until it succeeds, fails for good, times out, is cancelled or runs out of
    /// retries; `result` holds the outcome. Returns the number of attempts made.
    private func work(
        _ job: JobFile, kind: any JobKind, contexts: [AccountContext], runId: String, dryRun: Bool, startFailure: (any Error)?,
        log: JobLogger, result: inout RunResult
    ) async -> Int {
        if let startFailure, StorageFailure.isStorage(startFailure) {
            // The store cannot take the run's start (a full disk): the work would fail the same way.
            let failure = StorageFailure.jobError(startFailure, doing: "cannot record the run in the account's store")
            result.end(.failed, failure.exitCode, failure.message)
            return 0
        }
        var attempt = 0
        while true {
            attempt += 1
            result.attempts = attempt
            var report = JobReport()  // of this attempt: accounts done, plus a failure's partial report
            do {
                report = try await attemptOnce(job, kind: kind, contexts: contexts, runId: runId, attempt: attempt, dryRun: dryRun, log: log, report: &report)
                result.report = report
                result.end(.succeeded, .ok, nil)
                return attempt
            } catch is RunTimeout {
                result.end(.timedOut, .jobFailed, "timed out after \(ConfigDuration.format(job.timeout)); work done so far is kept")
                return attempt  // like a Kubernetes deadline: a run that overstays is not retried at once
            } catch is CancellationError {
                result.end(.cancelled, .temporary, "cancelled (stopped by a signal or replaced); work done so far is kept")
                return attempt
            } catch let error as JobError {
                if let partial = error.report { report.merge(partial) }
                result.report = report
                result.end(.failed, error.exitCode, error.message)
                if !error.retryable { return attempt }
            } catch {
                let (code, reason) = StorageFailure.classify(error)  // a full disk is 74 with the path, not a raw error
                result.report = report
                result.end(.failed, code, reason)
            }
            guard attempt < job.retry.maxAttempts, !Task.isCancelled else { return attempt }
            let delay = job.retry.delay(beforeRetry: attempt)
            log.warning(
                "run.retrying", ["attempt": .int(Int64(attempt)), "error": .string(result.message ?? ""), "delay_ms": .int(ConfigDuration.milliseconds(delay))])
            do { try await Task.sleep(for: delay) } catch {
                result.outcome = .cancelled
                result.exitCode = .temporary
                return attempt
            }
        }
    }

    /// One attempt: the kind's work for each account in turn, each within the job's timeout.
    /// `report` collects what the accounts done so far reported, for a failure's partial report.
    private func attemptOnce(
        _ job: JobFile, kind: any JobKind, contexts: [AccountContext], runId: String, attempt: Int, dryRun: Bool, log: JobLogger,
        report: inout JobReport
    ) async throws -> JobReport {
        for context in contexts {
            let accountLog = log.with(["account": .int(context.id)])
            let jobContext = JobContext(
                job: job, runId: runId, attempt: attempt, account: context,
                logger: accountLog, temp: temp, dryRun: dryRun)
            do {
                let accountReport = try await withTimeout(job.timeout) { try await kind.run(jobContext) }
                accountLog.info(kind.reportEvent, accountReport.logFields)
                report.merge(accountReport)
            } catch let error as JobError {
                if let partial = error.report { accountLog.info(kind.reportEvent, partial.logFields) }
                throw error
            }
        }
        return report
    }

    /// Closes the run: its record in every account (or, when a store cannot take it, in the
    /// lock file for the next run), the metrics of a real run, and the `run.finished` line.
    private func finish(
        _ job: JobFile, contexts: [AccountContext], fileLock: JobLock, runId: String, started: Date, origin: RunOrigin, attempts: Int, dryRun: Bool,
        log: JobLogger, result: inout RunResult
    ) async {
        result.finished = Date()
        // The metrics file is written while the stores take the closing record: each waits on
        // its own disk, and neither needs the other. A dry run changes nothing of production:
        // the metrics file (and the last-success time alerts read) stays as the last real run left it.
        let ended = result
        async let metricsWritten: Void = dryRun ? () : writeMetrics(job: job, result: ended, log: log)
        // The closing records are made durable now (`record` syncs them in the same trip to the
        // store), while the metrics file is written, rather than when the stores close: the
        // outcome a run reports survives a power loss, in a scheduler's long-lived stores too.
        var recorded = true
        for context in contexts
        where await record(context, job: job, runId: runId, started: started, origin: origin, attempt: attempts, dryRun: dryRun, end: result) != nil {
            recorded = false
            do { try await context.postbox.syncCommitted() } catch { logUnsynced(error, log: log) }
        }
        if !recorded {
            // The store cannot take the closing write (a full disk): leave the outcome in the
            // lock file's allocated bytes so the next run records it instead of "abandoned".
            let kept = fileLock.recordPendingOutcome(
                .init(
                    runId: runId, outcome: result.outcome.record, exitCode: result.exitCode.rawValue,
                    startedAtMs: Int64(started.timeIntervalSince1970 * 1000),
                    endedAtMs: Int64(result.finished.timeIntervalSince1970 * 1000),
                    attempts: Int32(attempts), message: result.message ?? ""))
            log.warning("run.record_deferred", ["kept_in_lock_file": .bool(kept)])
        }
        await metricsWritten
        var fields: [String: LogValue] = [
            "outcome": .string(result.outcome.rawValue), "exit_code": .int(Int64(result.exitCode.rawValue)),
            "duration_ms": .int(Int64(result.duration * 1000)), "attempts": .int(Int64(attempts)), "dry_run": .bool(dryRun),
        ]
        for (k, v) in result.report.counters { fields[k] = .int(v) }
        if let message = result.message { fields["error"] = .string(message) }
        log.log(result.outcome == .succeeded ? .info : .error, "run.finished", fields)
    }

    /// `run.started` in words, with the parameters as a job file writes them (`maxSize=1GiB`,
    /// not a byte count); a parameter whose name marks a secret shows as redacted.
    static func startedMessage(_ job: JobFile, dryRun: Bool) -> String {
        let params = job.params.values.keys.sorted().map { key in
            "\(key)=" + (LogRedaction.isSecretKey(key) ? LogRedaction.marker : job.params.values[key]!.description)
        }
        let accounts = job.accounts.count == 1 ? "account \(job.accounts[0])" : "accounts \(job.accounts.map(String.init).joined(separator: ", "))"
        return "\(job.name) started\(dryRun ? " (dry run)" : ""), kind \(job.kind), \(accounts)"
            + (params.isEmpty ? "" : ": " + params.joined(separator: " "))
    }

    /// The file lock, or the cluster lock of the job's accounts when `cluster.yaml` shares the store.
    static func runLock(root: DataRoot, job: JobFile, fileLock: JobLock) throws(JobError) -> any RunLock {
        guard let pg = try ClusterConfig.load(root: root).postgres else { return fileLock }
        return try ClusterRunLock(job: job.name, accounts: job.accounts, cluster: pg)
    }

    /// Where a run came from, kept in its record: the host that ran it, and the scheduled fire a
    /// cluster scheduler claimed it for.
    struct RunOrigin {
        var host: String?
        var fireAt: Int64?

        /// This machine's name as the kernel has it (`gethostname`: no resolver lookup on a
        /// cron run's path).
        static let localHost: String? = {
            var buffer = [CChar](repeating: 0, count: 256)
            guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }()
    }

    private func takeLock(_ lock: any RunLock, job: JobFile, log: JobLogger) async throws -> Bool {
        switch job.concurrencyPolicy {
        case .allow:
            return true
        case .forbid:
            return try lock.acquire(wait: job.lockWait)
        case .replace:
            if try lock.acquire(wait: .zero) { return true }
            if let holder = lock.holderDescription, lock.stopHolder() {
                log.notice("run.replacing", ["holder": .string(holder)])
            }
            return try lock.acquire(wait: max(job.lockWait, .seconds(30)))
        }
    }

    /// Writes the run's record; returns the error when the store could not take it. A closing
    /// record (`end`) is synced to the disk with what the store committed before it.
    @discardableResult
    private func record(
        _ context: AccountContext, job: JobFile, runId: String, started: Date, origin: RunOrigin, attempt: Int, dryRun: Bool, end: RunResult?
    ) async -> (any Error)? {
        let limit = historyLimit
        let record = Self.runRecord(job: job, runId: runId, started: started, origin: origin, attempt: attempt, dryRun: dryRun, end: end)
        let log = logger.with(job: job.name, run: runId)
        do {
            guard end != nil else {
                try await context.postbox.transaction { tx in try tx.jobRuns.set(record) }
                return nil
            }
            let (_, unsynced) = try await context.postbox.transactionThenSync { tx in
                try tx.jobRuns.set(record)
                try tx.jobRuns.prune(job: record.job, keep: limit)
            }
            if let unsynced { logUnsynced(unsynced, log: log) }
            return nil
        } catch {
            log.error("run.record_failed", ["error": .string(StorageFailure.classify(error).1)])
            return error
        }
    }

    private func logUnsynced(_ error: any Error, log: JobLogger) {
        log.warning("run.record_unsynced", ["error": .string(StorageFailure.classify(error).1)])
    }

    /// The run's record: running when `end` is nil, else its outcome.
    static func runRecord(job: JobFile, runId: String, started: Date, origin: RunOrigin, attempt: Int, dryRun: Bool, end: RunResult?) -> JobRunRecord {
        var run = JobRunRecord(
            runId: runId, job: job.name, kind: job.kind, startedAt: Int64(started.timeIntervalSince1970 * 1000),
            pid: getpid(), attempt: Int32(attempt))
        if let end {
            run.endedAt = Int64(end.finished.timeIntervalSince1970 * 1000)
            run.outcome = end.outcome.record
            run.exitCode = end.exitCode.rawValue
            run.message = end.message
            run.counters = end.report.counters
        }
        run.dryRun = dryRun
        run.host = origin.host
        run.fireAt = origin.fireAt
        return run
    }

    /// Runs still marked `running` whose process died without recording an outcome (SIGKILL,
    /// a crash, a power cut). Holding the job's lock proves no such run is alive. A run that
    /// ended but could not write its record (`pending`, from the lock file) gets its real outcome.
    /// False if the store could not be written.
    private func closeAbandonedRuns(_ context: AccountContext, job: JobFile, pending: JobLock.PendingOutcome?, log: JobLogger) async -> Bool {
        let name = job.name
        let kind = job.kind
        do {
            let closed = try await context.postbox.transaction { tx in try Self.closeAbandonedRuns(tx, job: name, kind: kind, pending: pending) }
            Self.logAbandoned(closed, pending: pending, log: log)
            return true
        } catch {
            log.error("run.record_failed", ["error": .string(StorageFailure.classify(error).1)])
            return false
        }
    }

    /// One `run.abandoned` warning per run closed as abandoned (not the pending one, which
    /// ended and got its real outcome).
    private static func logAbandoned(_ closed: [String], pending: JobLock.PendingOutcome?, log: JobLogger) {
        for id in closed where id != pending?.runId { log.warning("run.abandoned", ["abandoned_run": .string(id)]) }
    }

    /// `closeAbandonedRuns` inside a transaction: the ids of the runs it closed.
    private static func closeAbandonedRuns(_ tx: Transaction, job name: String, kind: String, pending: JobLock.PendingOutcome?) throws -> [String] {
        var closed: [String] = []
        let recent = try tx.jobRuns.recent(job: name, limit: 20)
        if let pending, !recent.contains(where: { $0.runId == pending.runId }) {
            // Its start could not be recorded either: record the whole run now.
            var run = JobRunRecord(
                runId: pending.runId, job: name, kind: kind, startedAt: pending.startedAtMs, pid: pending.pid, attempt: pending.attempts)
            run.endedAt = pending.endedAtMs
            run.outcome = pending.outcome
            run.exitCode = pending.exitCode
            run.message =
                pending.message + (pending.message.isEmpty ? "" : " ") + "(recorded by the next run: the store could not be written when it ran)"
            try tx.jobRuns.set(run)
        }
        for var run in recent where run.outcome == .running {
            if let pending, pending.runId == run.runId {
                run.outcome = pending.outcome
                run.exitCode = pending.exitCode
                run.endedAt = pending.endedAtMs
                run.message =
                    pending.message + (pending.message.isEmpty ? "" : " ") + "(recorded by the next run: the store could not be written when it ended)"
            } else {
                run.outcome = .failed
                run.message = "abandoned: pid \(run.pid)\(run.host.map { " on \($0)" } ?? "") ended without recording an outcome (killed or crashed)"
            }
            try tx.jobRuns.set(run)
            closed.append(run.runId)
        }
        return closed
    }

    /// Counts a scheduled run that did not start because the job is suspended (`enabled: false`
    /// or `jobrun pause`), in `jobrun_runs_total{outcome="suspended"}`.
    public func recordSuspended(_ job: JobFile, log: JobLogger) async {
        await countNonRun(job, outcome: "suspended", log: log)
    }

    /// A scheduled run not started because its fire `due` is older than the job's
    /// `startingDeadline`: counted in `jobrun_runs_total{outcome="missed"}` and recorded in each
    /// account's run history as skipped (a missed start), so `jobrun status` shows it.
    public func recordMissed(_ job: JobFile, due: Date, log: JobLogger) async {
        await countNonRun(job, outcome: MetricsWriter.missedOutcome, log: log)
        guard let kind = kinds.kind(named: job.kind) else { return }
        let now = Date()
        func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        var run = JobRunRecord(runId: Self.makeRunId(), job: job.name, kind: job.kind, startedAt: ms(now), pid: getpid(), attempt: 0)
        run.endedAt = run.startedAt
        run.outcome = .skipped
        run.exitCode = JobExitCode.ok.rawValue
        run.message = "missed its start at \(ISO8601DateFormatter().string(from: due)): older than startingDeadline, not run"
        run.host = RunOrigin.localHost
        run.fireAt = ms(due)
        let limit = historyLimit
        let record = run
        do {
            let contexts = try await openAccounts(job, kind: kind)
            do {
                for context in contexts {
                    try await context.postbox.transaction { tx in
                        try tx.jobRuns.set(record)
                        try tx.jobRuns.prune(job: record.job, keep: limit)
                    }
                }
            } catch {
                await accounts.release(job.accounts)
                throw error
            }
            await accounts.release(job.accounts)
        } catch {
            log.error("run.record_failed", ["error": .string(StorageFailure.classify(error).1)])
        }
    }

    /// Counts a run that did not start in the job's metrics file, and pushes the file when
    /// runs push their metrics (a CronJob's pod that exits 75 or finds the job paused reports
    /// that too).
    private func countNonRun(_ job: JobFile, outcome: String, log: JobLogger) async {
        let file: URL
        do { file = try metrics.count(job: job.name, kind: job.kind, outcome: outcome) } catch {
            log.error("metrics.write_failed", ["error": .string("\(error)")])
            return
        }
        if let pushgateway { await push(file, to: pushgateway, job: job, log: log) }
    }

    /// Writes the run's metrics file on `metricsQueue`: the write ends with an `fsync` and a
    /// `rename`, which must not hold a thread of the cooperative pool.
    private func writeMetrics(job: JobFile, result: RunResult, log: JobLogger) async {
        let metricsRecord = RunMetrics(
            job: job.name, kind: job.kind, started: result.started, finished: result.finished,
            outcome: result.outcome, counters: result.report.counters.filter { !result.report.sampledCounters.contains($0.key) }.mapValues(Double.init),
            samples: result.report.samples)
        let metrics = self.metrics
        let file = await withCheckedContinuation { (written: CheckedContinuation<URL?, Never>) in
            Self.metricsQueue.async {
                do { written.resume(returning: try metrics.write(metricsRecord)) } catch {
                    log.error("metrics.write_failed", ["error": .string("\(error)")])
                    written.resume(returning: nil)
                }
            }
        }
        if let pushgateway, let file { await push(file, to: pushgateway, job: job, log: log) }
    }

    /// Pushes the metrics file just written; a failed push is logged and never fails the run.
    private func push(_ file: URL, to pushgateway: Pushgateway, job: JobFile, log: JobLogger) async {
        guard case .success(let bytes) = SmallFile.read(file.path, limit: 16 << 20) else { return }
        do {
            try await pushgateway.push(String(decoding: bytes, as: UTF8.self), job: job.name, accounts: job.accounts)
            log.debug("metrics.pushed", ["endpoint": .string(pushgateway.redacted)])
        } catch {
            log.warning(
                "metrics.push_failed",
                [
                    "endpoint": .string(pushgateway.redacted), "error": .string(error.message),
                    "msg": .string("metrics push to \(pushgateway.redacted) failed: \(error.message)"),
                ])
        }
    }

    private static let metricsQueue = DispatchQueue(label: "JobRunner.metrics")

    static func makeRunId() -> String {
        String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(12))  // (replacingOccurrences goes through NSString: 0.4 ms at start-up)
    }
}
