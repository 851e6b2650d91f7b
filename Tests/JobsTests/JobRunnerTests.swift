import Foundation
import Jobs
import Postbox
import TestSupport
import XCTest

/// The runner's timeout, retry and cancellation rules, with real stores on a temporary root and
/// small kinds whose behaviour each test controls.
final class JobRunnerTests: XCTestCase {
    /// A kind that fails `failures` times, then succeeds; or sleeps (cooperatively) when asked.
    struct ScriptedKind: JobKind {
        static let name = "scripted"
        static let summary = "a kind whose behaviour each test controls"
        static let reportEvent = "scripted.report"
        static let usesCloud = false
        static let demo = KindDemo()
        static let parameters: [any JobParameter] = []

        let attempts = AttemptCounter()
        var failures = 0
        var retryable = true
        var exitCode: JobExitCode = .jobFailed
        var sleep: Duration?

        func run(_ context: JobContext) async throws -> JobReport {
            let n = attempts.next()
            if let sleep { try await Task.sleep(for: sleep) }
            if n <= failures { throw JobError("attempt \(n) failed", exitCode: exitCode, retryable: retryable) }
            return JobReport(counters: ["attempt": Int64(n)])
        }
    }

    final class AttemptCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func next() -> Int { lock.lock(); defer { lock.unlock() }; n += 1; return n }
        var count: Int { lock.lock(); defer { lock.unlock() }; return n }
    }

    private func job(timeout: String = "1s") throws -> JobFile {
        try JobFile.parse(
            yaml: """
                name: scripted
                kind: scripted
                timeout: \(timeout)
                retry:
                  backoffLimit: 2
                  backoff: {initial: 0s, max: 0s, multiplier: 1}
                """, file: "scripted.yaml", kinds: JobKindRegistry.shipped.adding(ScriptedKind()))
    }

    private func runner(_ kind: ScriptedKind, _ dir: TemporaryDirectory) throws -> JobRunner {
        TestRoot.prepare(dir.file("root"))
        let root = DataRoot(path: dir.file("root"))
        try root.createDirectories()
        let sink = try LogSink(root: root, process: "test", console: .off)
        return JobRunner(
            root: root, kinds: JobKindRegistry([kind]), accounts: AccountContextPool(root: root),
            logger: JobLogger(sink: sink), temp: TempBox(root: root, process: "test"))
    }

    private func history(_ dir: TemporaryDirectory) throws -> [JobRunRecord] {
        let postbox = try Postbox(path: dir.file("root/account-0/postbox/db/db.sqlite"), readOnly: true, key: TestRoot.key(ofRoot: dir.file("root")))
        return try postbox.readSync { try $0.jobRuns.recent(job: "scripted", limit: 10) }
    }

    func testRetriesUntilSuccessAndRecordsTheRun() async throws {
        let dir = TemporaryDirectory()
        let kind = ScriptedKind(failures: 2)
        let result = try await runner(kind, dir).run(try job())
        XCTAssertEqual(result.outcome, .succeeded)
        XCTAssertEqual(result.exitCode, .ok)
        XCTAssertEqual(result.attempts, 3)
        XCTAssertEqual(result.report.counters["attempt"], 3)
        let runs = try history(dir)
        XCTAssertEqual(runs.count, 1)
        XCTAssertEqual(runs.first?.outcome, .succeeded)
        XCTAssertEqual(runs.first?.attempt, 3)
        XCTAssertNotNil(runs.first?.endedAt)
        let metrics = try String(contentsOfFile: dir.file("root/metrics/jobrun_scripted.prom"), encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_scripted_attempt{jobrun_job=\"scripted\",kind=\"scripted\"} 3"), metrics)
    }

    func testGivesUpAfterTheBackoffLimit() async throws {
        let dir = TemporaryDirectory()
        let kind = ScriptedKind(failures: 10)
        let result = try await runner(kind, dir).run(try job())
        XCTAssertEqual(result.outcome, .failed)
        XCTAssertEqual(result.exitCode, .jobFailed)
        XCTAssertEqual(kind.attempts.count, 3, "backoffLimit 2 = three attempts")
        XCTAssertEqual(result.message, "attempt 3 failed")
        XCTAssertEqual(try history(dir).first?.outcome, .failed)
    }

    func testNonRetryableErrorsStopAtOnceWithTheirExitCode() async throws {
        let dir = TemporaryDirectory()
        let kind = ScriptedKind(failures: 10, retryable: false, exitCode: .config)
        let result = try await runner(kind, dir).run(try job())
        XCTAssertEqual(kind.attempts.count, 1)
        XCTAssertEqual(result.exitCode, .config)
    }

    func testTimeoutCancelsTheKindAndIsRecorded() async throws {
        let dir = TemporaryDirectory()
        let kind = ScriptedKind(sleep: .seconds(30))
        let started = Date()
        let result = try await runner(kind, dir).run(try job())
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "a 1s timeout must not wait for a 30s kind")
        XCTAssertEqual(result.outcome, .timedOut)
        XCTAssertEqual(result.exitCode, .jobFailed)
        XCTAssertEqual(kind.attempts.count, 1, "a timed-out run is not retried at once")
        XCTAssertEqual(try history(dir).first?.outcome, .timedOut)
    }

    func testCancellationStopsTheRunAsCancelled() async throws {
        let dir = TemporaryDirectory()
        let kind = ScriptedKind(sleep: .seconds(30))
        let r = try runner(kind, dir)
        let j = try job(timeout: "1m")
        let task = Task { await r.run(j) }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        let result = await task.value
        XCTAssertEqual(result.outcome, .cancelled)
        XCTAssertEqual(result.exitCode, .temporary)
        XCTAssertEqual(try history(dir).first?.outcome, .cancelled)
    }

    /// A run cancelled before its work (its lock lost while it opened its stores) ends cancelled
    /// without starting the kind, even a kind that never looks at cancellation.
    func testARunCancelledBeforeItsWorkNeverStartsTheKind() async throws {
        let dir = TemporaryDirectory()
        let kind = ScriptedKind()
        let r = try runner(kind, dir)
        let j = try job()
        let task = Task { () -> RunResult in
            withUnsafeCurrentTask { $0?.cancel() }
            return await r.run(j)
        }
        let result = await task.value
        XCTAssertEqual(result.outcome, .cancelled)
        XCTAssertEqual(result.exitCode, .temporary)
        XCTAssertEqual(kind.attempts.count, 0, "the kind did not start")
        XCTAssertEqual(try history(dir).first?.outcome, .cancelled)
    }

    func testASecondRunnerInTheSameProcessRespectsTheLock() async throws {
        let dir = TemporaryDirectory()
        let r = try runner(ScriptedKind(sleep: .milliseconds(800)), dir)
        let j = try job()
        async let first = r.run(j)
        try await Task.sleep(for: .milliseconds(200))
        let second = await r.run(j)
        XCTAssertEqual(second.exitCode, .temporary)
        XCTAssertEqual(second.outcome, .skipped)
        let firstResult = await first
        XCTAssertEqual(firstResult.outcome, .succeeded)
    }

    /// The start of a run closes what earlier runs left: one killed while running (abandoned),
    /// one whose closing record only reached the lock file (recorded with its real outcome), and
    /// one that reached neither store nor record (recorded whole). The lock file's pending
    /// outcome is cleared once recorded, and this run's own record is there.
    func testAStartClosesAbandonedRunsAndRecordsAPendingOutcome() async throws {
        let dir = TemporaryDirectory()
        let r = try runner(ScriptedKind(), dir)
        let j = try job()
        let postbox = try Postbox(directory: dir.file("root/account-0/postbox/db"), key: TestRoot.key(ofRoot: dir.file("root")))
        try postbox.transactionSync { tx in
            try tx.jobRuns.set(JobRunRecord(runId: "killed", job: "scripted", kind: "scripted", startedAt: 1_000, pid: 4_000_001, attempt: 1))
            try tx.jobRuns.set(JobRunRecord(runId: "ended", job: "scripted", kind: "scripted", startedAt: 2_000, pid: 4_000_002, attempt: 1))
        }
        /// What a run leaves in the lock file when it cannot write its outcome to the store.
        func leavePending(_ outcome: JobLock.PendingOutcome) throws {
            let lock = JobLock(root: r.root, job: "scripted")
            XCTAssertTrue(try lock.acquire())
            XCTAssertTrue(lock.recordPendingOutcome(outcome))
            lock.release()
        }
        try leavePending(.init(runId: "ended", outcome: .failed, exitCode: 74, startedAtMs: 2_000, endedAtMs: 3_000, message: "disk full"))

        let result = await r.run(j)
        XCTAssertEqual(result.outcome, .succeeded)
        let runs = try postbox.readSync { try $0.jobRuns.recent(job: "scripted", limit: 10) }
        let byId = Dictionary(uniqueKeysWithValues: runs.map { ($0.runId, $0) })
        XCTAssertEqual(byId["killed"]?.outcome, .failed)
        XCTAssertTrue(byId["killed"]?.message?.contains("abandoned: pid 4000001") == true, byId["killed"]?.message ?? "no message")
        XCTAssertEqual(byId["ended"]?.outcome, .failed)
        XCTAssertEqual(byId["ended"]?.exitCode, 74)
        XCTAssertEqual(byId["ended"]?.endedAt, 3_000)
        XCTAssertTrue(byId["ended"]?.message?.contains("recorded by the next run") == true, byId["ended"]?.message ?? "no message")
        XCTAssertEqual(byId[result.runId]?.outcome, .succeeded)
        let next = JobLock(root: r.root, job: "scripted")
        XCTAssertTrue(try next.acquire())
        XCTAssertNil(next.pendingOutcome(), "recorded, so cleared")
        next.release()

        // A pending outcome whose start never reached the store is recorded whole.
        try leavePending(.init(runId: "unseen", outcome: .timedOut, exitCode: 1, startedAtMs: 5_000, endedAtMs: 6_000, message: ""))
        let second = await r.run(j)
        XCTAssertEqual(second.outcome, .succeeded)
        let unseen = try postbox.readSync { try $0.jobRuns.recent(job: "scripted", limit: 10) }.first { $0.runId == "unseen" }
        XCTAssertEqual(unseen?.outcome, .timedOut)
        XCTAssertEqual(unseen?.startedAt, 5_000)
    }
}
