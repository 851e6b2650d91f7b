import ArgumentParser
import Foundation

/// `jobrun-bench`: each benchmark prints its figures next to a peer measured in the same run.
@main
struct JobrunBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobrun-bench",
        abstract: "Benchmarks against peers (raw SQLite, find, curl, aria2c), measured in one invocation.",
        subcommands: [PostboxBench.self]
    )
}

struct PostboxBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "postbox", abstract: "Postbox vs the raw SQLite C API.")
    @Option(help: "Messages in the bulk transaction.") var messages = 1_000_000
    @Option(help: "Single-row transactions.") var transactions = 100_000
    @Option(help: "Point reads.") var reads = 100_000
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-postbox"

    func run() throws {
        defer { try? FileManager.default.removeItem(atPath: workDir) }
        try PostboxBenchmark(messages: messages, smallTransactions: transactions, reads: reads, workDir: workDir).run()
    }
}
