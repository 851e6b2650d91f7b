import ArgumentParser
import Foundation
import Jobs

/// `jobrun status`: recent runs from each account's Postbox, opened read-only (never blocks a
/// running job).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Recent runs of each job: outcome, duration, counters.")

    @OptionGroup var options: GlobalOptions
    @Option(help: "Runs shown per job.") var limit = 5
    @Option(help: "Only this job.") var job: String?

    func run() throws {
        let root = options.dataRoot
        let inspection = StoreInspection(root: root)
        if let missing = inspection.missingRoot() { throw fail(.noInput, missing) }
        let runs: [StoreInspection.AccountRun]
        do { runs = try inspection.recentRuns(job: job, limit: limit) } catch { throw fail(error.exitCode, error.message) }
        if options.json {
            printJSON(
                .array(
                    runs.map { entry in
                        let r = entry.run
                        return .object([
                            "account": .int(entry.account), "job": .string(r.job), "run": .string(r.runId), "kind": .string(r.kind),
                            "outcome": .string(r.outcome.rawValue), "started_ms": .int(r.startedAt),
                            "duration_ms": r.durationMs.map { .int($0) } ?? .null, "exit_code": r.exitCode.map { .int(Int64($0)) } ?? .null,
                            "attempts": .int(Int64(r.attempt)), "message": r.message.map { .string($0) } ?? .null,
                            "counters": .object(r.counters.mapValues { .int($0) }), "dry_run": .bool(r.dryRun),
                        ])
                    }))
            return
        }
        if runs.isEmpty { print("no runs recorded under \(root.path)"); return }
        let formatter = ISO8601DateFormatter()
        for entry in runs {
            let (account, r) = (entry.account, entry.run)
            let started = formatter.string(from: Date(timeIntervalSince1970: Double(r.startedAt) / 1000))
            let duration = r.durationMs.map { String(format: "%.2fs", Double($0) / 1000) } ?? "running"
            let counters = r.counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            print(
                "\(r.job) [\(r.runId)] account \(account) \(started) \(r.outcome.rawValue)\(r.dryRun ? " (dry run)" : "") \(duration) \(counters)\(r.message.map { " — \($0)" } ?? "")"
            )
        }
    }
}
