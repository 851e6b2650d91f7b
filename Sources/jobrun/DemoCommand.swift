import ArgumentParser
import Foundation
import Jobs

/// `jobrun demo`: the product end to end on an embedded default — `cloudd` (built beside
/// `jobrun`) as a child process on loopback with a seeded dataset, a temporary data root (or
/// `--root`), and every job kind run in order through the same runner cron and systemd use
/// (`JobDemo`), then a summary.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run every job kind end to end against a local cloudd (temporary root unless --root).",
        discussion: """
            Needs the cloudd executable beside jobrun: `swift build --product cloudd` builds it.

            Examples:
              jobrun demo
              jobrun demo --root /tmp/demo-root && jobrun status --root /tmp/demo-root
              jobrun demo --encrypt   # the same on an encrypted root: every store under one random key
            """
    )

    @Option(help: "Data root to use (default: a temporary directory, removed afterwards).")
    var root: String?
    @Option(help: "Dataset seed of the embedded cloud.") var seed: UInt64 = 7
    @Flag(help: "Machine-readable JSON summary.") var json = false
    @Flag(help: "Run on an encrypted root: `jobrun init --encrypt` first, so every store is written under the root's key.")
    var encrypt = false

    func run() async throws {
        let keep = root != nil
        let rootPath = root ?? (NSTemporaryDirectory() + "jobrun-demo-\(getpid())")
        defer { if !keep { try? FileManager.default.removeItem(atPath: rootPath) } }
        var keyFile: String?
        if encrypt {
            // The demo's key lives in its own root, whatever key the environment names.
            do {
                if case .created(let path) = try RootInitialization.run(root: DataRoot(path: rootPath), encrypt: true, environment: [:]) {
                    keyFile = path
                }
            } catch {
                throw fail(error)
            }
        }
        let demo: JobDemo
        do { demo = try JobDemo(root: DataRoot(path: rootPath), seed: seed) } catch let error as JobError {
            throw fail(error)
        }
        defer { demo.stop() }

        if !json {
            print(
                "jobrun demo: local cloudd with \(try await demo.cloudFileCount()) files on \(demo.datacenters.count) DCs (\(demo.datacenters.joined(separator: ", ")))"
            )
            print("data root: \(rootPath)\(keep ? "" : " (temporary)")\(keyFile.map { ", encrypted at rest (key file \($0))" } ?? "")\n")
        }
        var results: [RunResult] = []
        var revalidation: (parents: Int, maxCallsPerParent: Int)?
        for kind in demo.kinds {
            if let setup = try await demo.prepare(kind), !json { print("• \(setup)") }
            let step = try await demo.run(kind)
            let result = step.result
            results.append(result)
            revalidation = step.revalidation ?? revalidation
            if !json {
                print("• \(result.job): \(result.outcome.rawValue) in \(String(format: "%.2f", result.duration)) s\(result.message.map { " — \($0)" } ?? "")")
                for line in result.report.summary { print("    \(line)") }
            }
        }
        if json {
            printJSON(
                .object([
                    "root": .string(rootPath), "encrypted": .bool(keyFile != nil),
                    "runs": .array(
                        results.map { r in
                            .object([
                                "job": .string(r.job), "outcome": .string(r.outcome.rawValue), "seconds": .double(r.duration),
                                "counters": .object(r.report.counters.mapValues { .int($0) }),
                            ])
                        }),
                    "revalidated_parents": .int(Int64(revalidation?.parents ?? 0)),
                    "max_revalidation_calls_per_parent": .int(Int64(revalidation?.maxCallsPerParent ?? 0)),
                ]))
        } else {
            printSummary(results, root: demo.root, keep: keep)
            if let revalidation {
                print(
                    "cloud:   \(revalidation.parents) parent entities revalidated, at most \(revalidation.maxCallsPerParent) call per parent (cloudd's counters)"
                )
            }
        }
        if results.contains(where: { $0.exitCode != .ok }) { throw ExitCode(JobExitCode.jobFailed.rawValue) }
    }

    private func printSummary(_ results: [RunResult], root: DataRoot, keep: Bool) {
        print("\nSummary")
        let header = ["job", "outcome", "seconds", "what it did"]
        var rows: [[String]] = []
        for r in results {
            // The kind's own first summary line says what it did in words (counts, bytes, calls).
            let did = r.report.summary.first ?? r.message ?? ""
            rows.append([r.job, r.outcome.rawValue, String(format: "%.2f", r.duration), did])
        }
        let (lines, widths) = alignedColumns([header] + rows)
        print(lines[0])
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        lines.dropFirst().forEach { print($0) }
        print("\nlogs:    \(root.logs(process: "demo").path)")
        print("metrics: \(root.metrics.path)")
        print("postbox: \(root.account(0).postboxDatabase.path)")
        if !keep { print("(the temporary root is removed on exit; pass --root DIR to keep it)") }
    }
}
