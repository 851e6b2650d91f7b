import ArgumentParser
import Foundation
import Jobs
import Postbox

/// `jobrun status`: one row per job at a glance (like `systemctl list-timers` or `kubectl get
/// cronjob`), then with `--runs` the recent runs; from each account's Postbox opened read-only
/// (never blocks a running job, creates nothing).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Each job at a glance: last run, outcome, last success, next run, running now, suspended.",
        discussion: """
            The jobs come from --jobs-dir (for next run and suspension) and the run history of \
            every account under --root, then whether the root is encrypted at rest (and where its key \
            comes from). --json prints {"version": 1, "jobs": [...], "runs": [...], "encryption": {...}}, \
            described in docs/operations.md.

            Examples:
              jobrun status --root /var/lib/jobrun --jobs-dir /etc/jobrun/jobs
              jobrun status --runs --job sync-history --limit 20
              jobrun status --json | jq '.jobs[] | select(.last_outcome != "succeeded")'
            """)

    @OptionGroup var options: GlobalOptions
    @Option(help: "Runs shown per job with --runs (and in --json).") var limit = 5
    @Option(help: "Only this job.") var job: String?
    @Flag(help: "Also list the recent runs of each job.") var runs = false

    /// Version of the `--json` shape.
    static let jsonVersion = 1

    func run() throws {
        let root = try options.existingRoot()
        let inspection = StoreInspection(root: root)
        let history: StoreInspection.RunHistory
        do { history = try inspection.runHistory(job: job, limit: max(limit, 1)) } catch { throw fail(error) }
        // The jobs directory is optional here when it is the `./jobs` fallback: without it, rows
        // come from the history alone. One that was asked for must load.
        let catalog: JobCatalog?
        if options.jobsDirIsExplicit {
            catalog = try options.catalog()
        } else {
            catalog = try? JobCatalog.loadRequired(directory: options.jobsDirectory)
        }
        let rows = JobStatusRow.rows(history: history, jobs: catalog?.jobs ?? [], suspension: JobSuspension(root: root), only: job)
        if let job, rows.isEmpty {
            let known = Set((catalog?.jobs.map(\.name) ?? []) + history.recent.map(\.run.job)).sorted()
            throw fail(.usage, JobResolveError.unknownJob(job, available: known).description + " (no job file and no recorded run)")
        }
        let recent = Dictionary(grouping: history.recent) { $0.run.job }.mapValues { Array($0.sorted { $0.run.startedAt > $1.run.startedAt }.prefix(limit)) }
        let shownRuns = recent.keys.sorted().flatMap { recent[$0]! }
        let encryption = RootEncryptionState.of(root)
        if options.json {
            printJSON(
                .object([
                    "version": .int(Int64(Self.jsonVersion)), "root": .string(root.path),
                    "jobs": .array(rows.map(\.json)), "runs": .array(shownRuns.map(Self.runJSON)),
                    "encryption": .object([
                        "encrypted": .bool(encryption.encrypted), "key_source": encryption.keySource.map { .string($0.path) } ?? .null,
                        "encrypted_stores": .int(Int64(encryption.encryptedStores)), "plaintext_stores": .int(Int64(encryption.plaintextStores)),
                    ]),
                ]))
            return
        }
        if rows.isEmpty {
            print("no jobs and no runs recorded under \(root.path)")
            print("data root: \(encryption.summary)")
            return
        }
        JobStatusRow.table(rows).forEach { print($0) }
        print("")
        print("data root: \(encryption.summary)")
        guard runs else { return }
        let formatter = ISO8601DateFormatter()
        print("")
        for entry in shownRuns {
            let (account, r) = (entry.account, entry.run)
            let started = formatter.string(from: Date(timeIntervalSince1970: Double(r.startedAt) / 1000))
            let duration = r.durationMs.map { String(format: "%.2fs", Double($0) / 1000) } ?? "running"
            let counters = r.counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            print(
                "\(r.job) [\(r.runId)] account \(account)\(r.host.map { " on \($0)" } ?? "") \(started) \(r.outcome.rawValue)\(r.dryRun ? " (dry run)" : "") \(duration) \(counters)\(r.message.map { " — \($0)" } ?? "")"
            )
        }
    }

    static func runJSON(_ entry: StoreInspection.AccountRun) -> LogValue {
        let r = entry.run
        return .object([
            "account": .int(entry.account), "job": .string(r.job), "run": .string(r.runId), "kind": .string(r.kind),
            "outcome": .string(r.outcome.rawValue), "started_ms": .int(r.startedAt),
            "duration_ms": r.durationMs.map { .int($0) } ?? .null, "exit_code": r.exitCode.map { .int(Int64($0)) } ?? .null,
            "attempts": .int(Int64(r.attempt)), "message": r.message.map { .string($0) } ?? .null,
            "counters": .object(r.counters.mapValues { .int($0) }), "dry_run": .bool(r.dryRun),
            "host": r.host.map { .string($0) } ?? .null,
        ])
    }
}

/// One job's line of `jobrun status`.
struct JobStatusRow {
    var job: String
    var kind: String
    var lastRun: JobRunRecord?
    var lastSuccess: JobRunRecord?
    var lastFailure: JobRunRecord?
    var next: Date?
    var running: Bool
    var suspended: JobSuspension.Reason?

    /// Last success and last failure come from the store's index; the recent runs stand in for
    /// it only in a history written before the index existed.
    static func rows(history: StoreInspection.RunHistory, jobs: [JobFile], suspension: JobSuspension, only: String?) -> [JobStatusRow] {
        let byJob = Dictionary(grouping: history.recent.map(\.run)) { $0.job }
        let now = Date()
        var names = Set(byJob.keys).union(jobs.map(\.name))
        if let only { names = names.filter { $0 == only } }
        return names.sorted().map { name in
            let file = jobs.first { $0.name == name }
            let records = (byJob[name] ?? []).sorted { $0.startedAt > $1.startedAt }
            let running = records.contains { $0.outcome == .running && $0.pid > 0 && kill($0.pid, 0) == 0 }
            return JobStatusRow(
                job: name, kind: file?.kind ?? records.first?.kind ?? "?", lastRun: records.first { $0.outcome != .running || running },
                lastSuccess: history.latestSuccess[name]?.run ?? records.first { $0.outcome == .succeeded && !$0.dryRun },
                lastFailure: history.latestFailure[name]?.run ?? records.first { $0.outcome == .failed || $0.outcome == .timedOut },
                next: file.flatMap { $0.nextFire(after: now) }, running: running,
                suspended: file.flatMap { suspension.suspension(of: $0) } ?? suspension.pause(of: name))
        }
    }

    var outcomeText: String {
        guard let lastRun else { return "-" }
        return lastRun.outcome.rawValue + (lastRun.dryRun ? " (dry run)" : "")
    }

    var json: LogValue {
        func time(_ ms: Int64?) -> LogValue { ms.map { .string(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0) / 1000))) } ?? .null }
        return .object([
            "job": .string(job), "kind": .string(kind), "last_run": time(lastRun?.startedAt), "last_run_id": lastRun.map { .string($0.runId) } ?? .null,
            "last_outcome": lastRun.map { .string($0.outcome.rawValue) } ?? .null, "last_dry_run": .bool(lastRun?.dryRun ?? false),
            "last_success": time(lastSuccess?.endedAt), "last_failure": time(lastFailure?.endedAt),
            "last_run_host": lastRun?.host.map { .string($0) } ?? .null, "next_run": next.map { .string(ISO8601DateFormatter().string(from: $0)) } ?? .null,
            "running": .bool(running), "suspended": suspended.map { .string($0.word) } ?? .null,
        ])
    }

    /// Aligned columns, like `systemctl list-timers`.
    static func table(_ rows: [JobStatusRow]) -> [String] {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        func time(_ ms: Int64?) -> String { ms.map { formatter.string(from: Date(timeIntervalSince1970: Double($0) / 1000)) } ?? "-" }
        let header = ["JOB", "LAST RUN", "HOST", "OUTCOME", "LAST SUCCESS", "LAST FAILURE", "NEXT RUN", "RUNNING", "SUSPENDED"]
        let cells = rows.map { row in
            [
                row.job, time(row.lastRun?.startedAt), row.lastRun?.host ?? "-", row.outcomeText, time(row.lastSuccess?.endedAt),
                time(row.lastFailure?.endedAt),
                row.next.map { formatter.string(from: $0) } ?? "-", row.running ? "yes" : "no", row.suspended?.word ?? "-",
            ]
        }
        return alignedColumns([header] + cells).lines.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}
