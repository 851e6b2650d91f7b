import ArgumentParser
import Foundation
import Jobs
import ServerFixtures

/// `jobrun-bench`: each benchmark prints its figures next to a peer measured in the same run.
@main
struct JobrunBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobrun-bench",
        abstract: "Benchmarks against peers (raw SQLite, find, curl, aria2c), measured in one invocation.",
        subcommands: [
            PostboxBench.self, NoopRunBench.self, CleanupBench.self, DownloadBench.self, UploadBench.self, RevalidateBench.self, RetentionBench.self,
            RetentionPassCommand.self, RepresentationsBench.self, RepresentationsPassCommand.self, FuzzBench.self, S3Bench.self, ClusterBench.self,
            QueueDrainCommand.self, VideoPrefixBench.self, EncryptBench.self, EncryptPassCommand.self, AllBench.self,
        ]
    )
}

struct PostboxBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "postbox", abstract: "Postbox vs the raw SQLite C API.")
    @Option(help: "Messages in the bulk transaction.") var messages = 1_000_000
    @Option(help: "Single-row transactions.") var transactions = 100_000
    @Option(help: "Point reads.") var reads = 100_000
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-postbox"
    @Option(help: "Store: sqlite, or postgres (then also the SQLite figures, same sizes).") var store = "sqlite"
    @Flag(
        help:
            "Also the encrypted Postbox against the plain one and raw SQLite, and opening with a raw key (with --store postgres: sealed values against clear ones)."
    )
    var encrypted = false
    @Option(
        help:
            "PostgreSQL server for --store postgres (postgresql://user@host/db or postgresql:///db?host=/socket/dir); without one, a server of its own is started."
    )
    var postgresUrl: String?
    @Flag(help: "With --store postgres: only the PostgreSQL figures.") var postgresOnly = false

    func run() throws {
        defer { WorkDirectory.remove(workDir) }
        if store == "postgres" {
            try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
            var server: PostgresServer?
            defer { server?.stop() }
            let url: String
            if let given = postgresUrl ?? ProcessInfo.processInfo.environment[PostgresClusterConfig.urlVariable] {
                url = given
            } else {
                let started = try PostgresServer()
                server = started
                url = "postgresql:///\(try started.createDatabase("bench_postbox"))?host=\(started.socketDirectory)&port=\(started.port)&user=\(started.user)"
            }
            guard let pg = try ClusterConfig.load(root: DataRoot(path: workDir), environment: [PostgresClusterConfig.urlVariable: url]).postgres else {
                throw ValidationError("--postgres-url: not a PostgreSQL URL")
            }
            try PostgresPostboxBenchmark(messages: messages, smallTransactions: transactions, reads: reads, endpoint: try pg.endpoint(), sealed: encrypted)
                .run()
            if postgresOnly { return }
        } else if store != "sqlite" {
            throw ValidationError("--store must be sqlite or postgres")
        }
        try PostboxBenchmark(messages: messages, smallTransactions: transactions, reads: reads, workDir: workDir).run()
        if encrypted { try EncryptedPostboxBenchmark(messages: messages, smallTransactions: transactions, reads: reads, workDir: workDir).run() }
    }
}

struct NoopRunBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "noop-run", abstract: "A cron invocation with nothing to do beside the binary's own start-up (jobrun --version), as context.")
    @Option(help: "Invocations of each command.") var runs = 30
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-noop"

    func run() throws {
        defer { WorkDirectory.remove(workDir) }
        try NoopRunBenchmark(runs: runs, workDir: workDir).run()
    }
}

struct CleanupBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cleanup", abstract: "TimeBasedCleanup vs find over the same cache tree.")
    @Option(help: "Files in the cache.") var files = 1_000_000
    @Option(help: "Peers owning them.") var folders = 256
    @Option(help: "Fraction to evict.") var evict = 0.1
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-cleanup"

    func run() throws {
        defer { WorkDirectory.remove(workDir) }
        try runCleanupBenchmark(files: files, folders: folders, evictFraction: evict, workDir: workDir)
    }
}

struct FuzzBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fuzz", abstract: "A bounded-time mutation fuzzer over the job-file and account-config decoders.")
    @Option(help: "How long to fuzz, in seconds.") var seconds = 60.0
    @Option(help: "Seed of the mutation sequence (a run is replayed by its seed).") var seed: UInt64 = 1
    @Option(help: "Job files to start from (default: the jobs folder of the checkout this binary was built in).") var jobsDir: String?
    @Option(help: "Where findings are saved.") var outDir = NSTemporaryDirectory() + "jobrun-fuzz"

    func run() throws {
        let jobs = jobsDir ?? (checkoutDirectory().map { $0 + "/jobs" } ?? "jobs")
        try FuzzBenchmark(seconds: seconds, seed: seed, jobsDir: jobs, outDir: outDir).run()
    }
}
