import Foundation

/// The cost of a cron invocation with nothing to do: `jobrun run` of a cleanup job over an
/// empty cache (open the root, Postbox, MediaBox, take the lock, record the run, write metrics)
/// against a process that only opens the same database (`sqlite3 db 'PRAGMA schema_version'`).
struct NoopRunBenchmark {
    var runs = 30
    var workDir: String

    func run() throws {
        let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let jobrun = binDir.appendingPathComponent("jobrun").path
        guard FileManager.default.isExecutableFile(atPath: jobrun) else {
            throw BenchError("build jobrun first: \(jobrun) is missing (swift build -c release --product jobrun)")
        }
        guard let sqlite3 = which("sqlite3") else { throw BenchError("sqlite3 is not installed (scripts/install-deps.sh)") }
        let root = workDir + "/root"
        let jobs = workDir + "/jobs"
        try FileManager.default.createDirectory(atPath: jobs, withIntermediateDirectories: true)
        try """
        name: idle-cleanup
        kind: time-based-cleanup
        schedule: "*/5 * * * *"
        params:
          maxSize: 1GiB
        """.write(toFile: jobs + "/idle-cleanup.yaml", atomically: true, encoding: .utf8)
        let jobArgs = ["run", "idle-cleanup", "--root", root, "--jobs-dir", jobs]
        guard try spawn(jobrun, jobArgs) == 0 else { throw BenchError("jobrun run failed") }
        let db = root + "/account-0/postbox/db/db.sqlite"

        var base: [Double] = []
        var job: [Double] = []
        for _ in 0..<runs {
            base.append(try measure { guard try spawn(sqlite3, [db, "PRAGMA schema_version;"]) == 0 else { throw BenchError("sqlite3 failed") } })
            job.append(try measure { guard try spawn(jobrun, jobArgs) == 0 else { throw BenchError("jobrun run failed") } })
        }
        base.sort()
        job.sort()
        let (b, j) = (base[runs / 2], job[runs / 2])
        var table = BenchTable(title: "A cron invocation with nothing to do (median of \(runs), alternating)", columns: ["command", "median ms", "ratio", "target"])
        table.add(["sqlite3 <postbox db> 'PRAGMA schema_version' (baseline process start)", fmt(b * 1000, 1), "1.00×", ""])
        table.add(["jobrun run idle-cleanup (root, Postbox, MediaBox, lock, record, metrics)", fmt(j * 1000, 1), fmt(j / b) + "×", j / b < 2 ? "<2× ok" : "<2× MISSED"])
        table.print()
        print("peak RSS of the children: \(fmt(childrenPeakRSSMiB(), 1)) MiB")
    }

    private func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}

/// Runs a process to completion with its output discarded; returns its exit status.
func spawn(_ path: String, _ args: [String]) throws -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    return p.terminationStatus
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
