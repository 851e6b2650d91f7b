import ArgumentParser
import Foundation

/// `jobrun-bench all`: every benchmark, each in its own process (so one's memory and page cache
/// state do not count against the next), then one table of the ratios against the peers. The
/// scratch directories are removed at the end, so that no benchmark's file creation pays for an
/// earlier one's removals (`WorkDirectory`).
struct AllBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all",
        abstract: "Run every benchmark and print one table of ratios against the peers.")

    @Flag(help: "Small sizes (a smoke run in a few minutes; the figures are noisier).") var quick = false
    @Flag(help: "The full sizes of BENCHMARKS.md (1,000,000-file cleanup, 1 GB upload; takes much longer).") var full = false
    @Option(help: "Only these benchmarks (comma-separated names).") var only: String?

    func run() throws {
        let ratiosFile = NSTemporaryDirectory() + "jobrun-bench-ratios-\(getpid()).jsonl"
        guard FileManager.default.createFile(atPath: ratiosFile, contents: nil) else { throw BenchError("cannot create \(ratiosFile)") }
        defer { try? FileManager.default.removeItem(atPath: ratiosFile) }
        let removalsFile = NSTemporaryDirectory() + "jobrun-bench-removals-\(getpid())"
        guard FileManager.default.createFile(atPath: removalsFile, contents: nil) else { throw BenchError("cannot create \(removalsFile)") }
        defer { WorkDirectory.removeDeferred(listedIn: removalsFile) }
        let selected = only.map { Set($0.split(separator: ",").map(String.init)) }
        var failed: [String] = []
        for (name, arguments) in plan() where selected?.contains(name) ?? true {
            print("\n════ jobrun-bench \(([name] + arguments).joined(separator: " "))")
            fflush(nil)  // before the child writes to the same output
            let status = try spawnInheriting(
                Self.executable, [name] + arguments,
                environment: [BenchRatios.environmentKey: ratiosFile, WorkDirectory.deferredRemovalsKey: removalsFile])
            if status != 0 { failed.append(name) }
        }
        let ratios = BenchRatios.read(ratiosFile)
        // The targets first (for the transfers, the rows at real round trips), then the rows
        // printed as context (loopback transfers, the idle run), each saying what it measures.
        for (title, rows) in [
            ("Ratios against peers, with targets (higher is better; measured in this invocation)", ratios.filter { $0.target != nil }),
            ("Context, without targets (what each row measures is in its name)", ratios.filter { $0.target == nil }),
        ] where !rows.isEmpty {
            var table = BenchTable(title: title, columns: ["benchmark: measure", "product", "peer", "ratio", "target", ""])
            for r in rows {
                let target = r.target.map { "≥ " + fmt($0) + "×" } ?? "none"
                let verdict = r.met.map { $0 ? "met" : "MISSED" } ?? "context"
                table.add(["\(r.benchmark): \(r.measure)", r.product, r.peer, r.ratioText, target, verdict])
            }
            table.print()
        }
        let targeted = ratios.compactMap(\.met)
        let context = ratios.count - targeted.count
        print("\n\(targeted.filter { $0 }.count) of \(targeted.count) targets met" + (context > 0 ? "; \(context) shown as context, without a target" : ""))
        if !failed.isEmpty { throw BenchError("benchmarks that failed: \(failed.joined(separator: ", "))") }
    }

    /// Each benchmark with the sizes of this run. Those that time file creation (download,
    /// upload, s3) come before cleanup, which removes tens of thousands of files (`WorkDirectory`).
    private func plan() -> [(String, [String])] {
        if quick {
            return [
                ("postbox", ["--messages", "100000", "--transactions", "10000", "--reads", "20000", "--encrypted"]),
                ("postbox", ["--store", "postgres", "--postgres-only", "--encrypted", "--messages", "20000", "--transactions", "2000", "--reads", "5000"]),
                ("encrypt", ["--messages", "200000"]),
                ("noop-run", ["--runs", "10"]),
                ("download", ["--small-files", "300", "--large-files", "2", "--large-mb", "50", "--rss-gib", "1"]),
                ("upload", ["--large-mb", "100", "--small-files", "100", "--rounds", "1"]),
                ("s3", ["--large-mb", "50", "--small-files", "100"]),
                ("revalidate", ["--parents", "100", "--per-parent", "100"]),
                ("retention", ["--messages", "200000"]),
                ("representations", ["--photos", "200"]),
                ("video-prefix", ["--videos", "50", "--background-mb", "300"]),
                ("cleanup", ["--files", "20000"]),
                ("fuzz", ["--seconds", "10"]),
                ("cluster", ["--quick"]),
            ]
        }
        return [
            ("postbox", ["--encrypted"]),
            // Sealed against clear values on a PostgreSQL server of its own (each point read is
            // two round trips, so smaller sizes than SQLite's).
            ("postbox", ["--store", "postgres", "--postgres-only", "--encrypted", "--messages", "100000", "--transactions", "10000", "--reads", "20000"]),
            ("encrypt", []),
            ("noop-run", []),
            ("download", []),
            ("upload", full ? [] : ["--large-mb", "500"]),
            // Three rounds: the moto server both tools share answers more slowly as it fills,
            // and a slow round then costs a tool one round rather than the comparison.
            ("s3", (full ? [] : ["--large-mb", "200"]) + ["--rounds", "3"]),
            ("revalidate", []),
            ("retention", []),
            ("representations", []),
            ("video-prefix", []),
            ("cleanup", ["--files", full ? "1000000" : "200000"]),
            ("fuzz", []),
            ("cluster", []),
        ]
    }

    private static var executable: String { thisExecutable.path }
}

/// Runs a process with this process's stdout and stderr; returns its exit status.
func spawnInheriting(_ path: String, _ arguments: [String], environment: [String: String]) throws -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    try p.run()
    p.waitUntilExit()
    return p.terminationStatus
}
