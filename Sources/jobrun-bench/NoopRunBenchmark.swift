import Foundation
import ServerFixtures

/// The cost of a cron invocation with nothing to do: `jobrun run` of a cleanup job over an
/// empty cache (open the root, Postbox, MediaBox, take the lock, record the run, write metrics)
/// beside the start-up every invocation of the binary pays (`jobrun --version`: the Swift
/// runtime, the binary's libraries and the command-line parse) and a process that only opens the
/// same database read-only (`sqlite3 -readonly db 'PRAGMA schema_version'`). Context only, with
/// no target: the difference is a few milliseconds no operator notices. The jobs directory also
/// holds six other job files, as many as `jobs/` ships: an operator's directory is not one file.
struct NoopRunBenchmark {
    var runs = 30
    var workDir: String

    func run() throws {
        let jobrun = siblingExecutable("jobrun")
        guard FileManager.default.isExecutableFile(atPath: jobrun) else {
            throw BenchError("build jobrun first: \(jobrun) is missing (swift build -c release --product jobrun)")
        }
        guard let sqlite3 = SystemCommand.onPath("sqlite3") else { throw BenchError("sqlite3 is not installed (scripts/install-deps.sh)") }
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
        for other in 1...6 {
            try """
            name: other-\(other)
            kind: time-based-cleanup
            schedule: "\(other) 3 * * *"
            params:
              maxSize: \(other)GiB
            """.write(toFile: jobs + "/other-\(other).yaml", atomically: true, encoding: .utf8)
        }
        let jobArgs = ["run", "idle-cleanup", "--root", root, "--jobs-dir", jobs]
        guard try spawn(jobrun, jobArgs) == 0 else { throw BenchError("jobrun run failed") }
        let db = root + "/account-0/postbox/db/db.sqlite"
        // A cron run syncs its record and its metrics file: on a disk still writing back what an
        // earlier benchmark wrote (gigabytes, in `all`), each sync would wait behind that, and
        // `--version`, which syncs nothing, would not. Measured on a settled disk, as a timer
        // finds it.
        settleDisk()

        // Read-only: a read-write sqlite3 would checkpoint and delete the WAL that jobrun keeps
        // between runs, and every measured run would then start from a new WAL.
        var base = Timings(path: sqlite3, arguments: ["-readonly", db, "PRAGMA schema_version;"])
        var job = Timings(path: jobrun, arguments: jobArgs)
        var version = Timings(path: jobrun, arguments: ["--version"])
        for _ in 0..<runs {
            try version.run()
            try base.run()
            try job.run()
        }
        let (b, j, v) = (median(base.wall), median(job.wall), median(version.wall))
        var table = BenchTable(
            title: "A cron invocation with nothing to do, as context (median of \(runs), alternating; CPU and page faults are means)",
            columns: ["command", "median ms", "÷ --version", "CPU ms", "page faults"])
        table.add(
            ["sqlite3 -readonly <postbox db> 'PRAGMA schema_version' (context: a C program's start)", fmt(b * 1000, 1), fmt(b / v) + "×"]
                + base.usageColumns)
        table.add(["jobrun --version (the Swift runtime's own start-up)", fmt(v * 1000, 1), "1.00×"] + version.usageColumns)
        table.add(
            ["jobrun run idle-cleanup (root, Postbox, MediaBox, lock, record, metrics)", fmt(j * 1000, 1), fmt(j / v) + "×"]
                + job.usageColumns)
        table.print()
        BenchRatios.record(
            "noop-run", "idle cron invocation", product: fmt(j * 1000, 1) + " ms", peer: fmt(v * 1000, 1) + " ms jobrun --version",
            ratio: v / j, target: nil)
        print("peak RSS of the children: \(fmt(childrenPeakRSSMiB(), 1)) MiB")
    }

    /// One command's runs: wall time of each, and the CPU time and page faults the kernel
    /// counted for it, so the table shows what the run adds to the start-up and in what form.
    private struct Timings {
        let path: String
        let arguments: [String]
        var wall: [Double] = []
        var cpuSeconds = 0.0
        var minorFaults = 0

        init(path: String, arguments: [String]) {
            self.path = path
            self.arguments = arguments
        }

        mutating func run() throws {
            var usage: ChildUsage?
            wall.append(try measure { usage = try spawnCounted(path, arguments) })
            guard let usage, usage.status == 0 else {
                throw BenchError("\(([path] + arguments).joined(separator: " ")) failed (exit \(usage?.status ?? -1))")
            }
            cpuSeconds += usage.cpuSeconds
            minorFaults += usage.minorFaults
        }

        var usageColumns: [String] {
            let n = Double(max(wall.count, 1))
            return [fmt(cpuSeconds / n * 1000, 1), fmt(Double(minorFaults) / n, 0)]
        }
    }
}

/// Runs a process to completion with its output discarded; returns its exit status. Uses
/// `posix_spawn` directly: Foundation's `Process` adds tens of milliseconds per launch on Linux,
/// which would hide the very start-up cost this benchmark measures.
func spawn(_ path: String, _ args: [String]) throws -> Int32 { try spawnCounted(path, args).status }

/// What a child process cost, as the kernel counted it when it was reaped.
struct ChildUsage {
    var status: Int32
    /// User and system CPU time.
    var cpuSeconds: Double
    /// Page faults served without I/O: first touches of code, data and stacks.
    var minorFaults: Int
}

/// `spawn`, with the child's CPU time and page faults.
func spawnCounted(_ path: String, _ args: [String]) throws -> ChildUsage {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([path] + args).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    return ChildUsage(
        status: (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), cpuSeconds: usage.cpuSeconds, minorFaults: usage.ru_minflt)
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
