import Foundation
import Postbox

/// The long-running `jobrun schedule`: fires each enabled job when its schedule is due (unless
/// it is paused, see `JobSuspension`), several
/// at once, all sharing this process's `AccountContextPool` (one Postbox per account). When its
/// task is cancelled (SIGTERM, SIGINT) it stops launching, running jobs are cancelled and stop
/// at their next checkpoint, and it returns once they have.
public struct Scheduler: Sendable {
    public let jobs: [JobFile]
    public let runner: JobRunner
    public let logger: JobLogger
    /// Also run every enabled job once at start (after a deploy, or in tests).
    public var runAllAtStart: Bool
    /// With shared stores: each scheduled fire of each (job, account) is a work item that the
    /// hosts claim one at a time, run once, and take over from a host that died.
    public var workQueue: (any ClusterWorkQueue)?

    public init(jobs: [JobFile], runner: JobRunner, logger: JobLogger, runAllAtStart: Bool = false, workQueue: (any ClusterWorkQueue)? = nil) {
        self.jobs = jobs.filter { $0.enabled && ($0.schedule != nil || runAllAtStart) }
        self.runner = runner
        self.logger = logger
        self.runAllAtStart = runAllAtStart
        self.workQueue = workQueue
    }

    /// Runs until cancelled; returns how many runs it started and how they ended.
    @discardableResult
    public func run() async -> [RunOutcome: Int] {
        logger.info("scheduler.started", ["jobs": .array(jobs.map { .string($0.name) }), "pid": .int(Int64(getpid()))])
        let tracker = RunTracker()
        // Read at every fire: `jobrun pause` in another process takes effect at the next one.
        let suspension = JobSuspension(root: runner.root)
        let start = Date()
        var nextFire: [String: Date] = [:]
        for job in jobs { nextFire[job.name] = runAllAtStart ? start : job.nextFire(after: start) }
        let cluster = workQueue.map { ClusterWork(queue: $0) }
        var nextPoll = start

        await withTaskGroup(of: Void.self) { group in
            while !Task.isCancelled {
                let now = Date()
                for job in jobs {
                    guard let due = nextFire[job.name], due <= now else { continue }
                    nextFire[job.name] = job.nextFire(after: now)
                    let log = logger.with(job: job.name, run: nil)
                    if let deadline = job.startingDeadline, now.timeIntervalSince(due) > Double(ConfigDuration.milliseconds(deadline)) / 1000 {
                        log.warning("scheduler.missed", ["due": .string(ISO8601DateFormatter().string(from: due))])
                        await runner.recordMissed(job, due: due, log: log)
                        continue
                    }
                    if let reason = suspension.pause(of: job.name) {
                        log.notice("run.suspended", ["reason": .string(reason.word), "msg": .string("\(job.name) not run: \(reason)")])
                        await runner.recordSuspended(job, log: log)
                        continue
                    }
                    if let cluster, due != start {
                        // The (job, account) run locks keep the concurrency policy across hosts.
                        await cluster.enqueue(job, due: due, log: log)
                        cluster.startWorker(for: job, in: &group, runner: runner, tracker: tracker, logger: logger)
                        continue
                    }
                    if job.concurrencyPolicy != .allow, await tracker.isRunning(job.name) {
                        log.notice("scheduler.skipped", ["reason": "the previous run is still active"])
                        continue
                    }
                    await tracker.started(job.name)
                    group.addTask {
                        let result = await runner.run(job)
                        await tracker.finished(result)
                    }
                }
                if let cluster, cluster.takeNews() || Date() >= nextPoll {
                    // Items added by other hosts, handed back (both announced at once), or whose
                    // holder's lease ran out (found by the poll).
                    await cluster.listen(log: logger)
                    for job in jobs { cluster.startWorker(for: job, in: &group, runner: runner, tracker: tracker, logger: logger) }
                    await cluster.reportClaimedElsewhere(logger: logger)
                    nextPoll = Date().addingTimeInterval(cluster.pollSeconds)
                }
                var wake = nextFire.values.min().map { $0.timeIntervalSince(Date()) } ?? 60
                if cluster != nil { wake = min(wake, nextPoll.timeIntervalSince(Date()), ClusterWork.newsCheckInterval) }
                do { try await Task.sleep(for: .milliseconds(Int64(min(max(wake, 0.01), 60) * 1000))) } catch { break }
            }
            logger.info("scheduler.stopping", ["running": .int(Int64(await tracker.runningCount))])
            await group.waitForAll()
            await cluster?.reportClaimedElsewhere(logger: logger)
            await cluster?.queue.stopListening()
        }
        let outcomes = await tracker.outcomes
        logger.info("scheduler.stopped", ["runs": .int(Int64(outcomes.values.reduce(0, +)))])
        return outcomes
    }
}

/// Which jobs the scheduler is running now, and how finished runs ended.
actor RunTracker {
    private var running: [String: Int] = [:]
    private(set) var outcomes: [RunOutcome: Int] = [:]

    func started(_ job: String) { running[job, default: 0] += 1 }
    func finished(_ result: RunResult) {
        running[result.job, default: 1] -= 1
        outcomes[result.outcome, default: 0] += 1
    }
    func isRunning(_ job: String) -> Bool { running[job, default: 0] > 0 }
    var runningCount: Int { running.values.reduce(0, +) }
}
