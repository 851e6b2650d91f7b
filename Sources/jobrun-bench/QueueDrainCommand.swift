import ArgumentParser
import Foundation
import Jobs
import Postbox

/// `jobrun-bench queue-drain`: one scheduler host's share of the cluster's work with empty jobs,
/// run by `jobrun-bench cluster` on each host: one worker per job, as `jobrun schedule` has,
/// each claiming the job's items one at a time through `ClusterWorkQueue` (its own connection)
/// and marking each done at once — finishing one and claiming the next in one statement, as
/// the scheduler's worker does — until none is left. Prints the items it finished.
struct QueueDrainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue-drain", abstract: "Claim and finish cluster work items with empty jobs until none is left (used by `cluster`).",
        shouldDisplay: false)
    @Option(help: "PostgreSQL host address.") var host: String
    @Option(help: "PostgreSQL port.") var port: Int
    @Option(help: "PostgreSQL user.") var user: String
    @Option(help: "Database.") var database: String
    @Option(help: "This host's name in the claims.") var name: String
    @Option(help: "Jobs, comma-separated: one worker each.") var jobs: String

    func run() throws {
        let cluster = PostgresClusterConfig(address: .tcp(host: host, port: port), username: user, database: database)
        let jobs = self.jobs
        let name = self.name
        let finished = try awaitBlocking {
            try await Self.drain(cluster: cluster, jobs: jobs, name: name)
        }
        print("{\"finished\": \(finished)}")
    }

    private static func drain(cluster: PostgresClusterConfig, jobs: String, name: String) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for job in jobs.split(separator: ",").map(String.init) {
                let queue = try cluster.workQueue(holder: .init(host: "\(name)/\(job)", pid: getpid()))
                group.addTask {
                    var count = 0
                    var next = try await queue.claim(job: job)
                    while let claim = next {
                        let (finished, following) = try await queue.finishAndClaimNext(claim, outcome: "succeeded")
                        if finished { count += 1 }
                        next = following
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
    }
}

/// Runs `body` on Swift's concurrency pool and blocks this thread (the main thread of a
/// synchronous command, never a pool thread) until it ends.
func awaitBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task {
        box.result = await Result(catching: body)
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

/// A result handed from a task to a blocked thread.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: written once before the semaphore's signal, read after its wait.
    var result: Result<T, any Error>?
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
