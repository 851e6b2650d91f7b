import Foundation

// Child processes for crash and concurrency tests: `jobrun-testkit <command> [args…]`.
// Each module's commands live in their own file; this table only lists them.
/// A testkit command: arguments in, throws on failure.
typealias TestkitCommand = @Sendable ([String]) throws -> Void

/// Writes a line to stdout unbuffered, so a parent waiting for it sees it at once.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Runs an async body to completion from synchronous code.
func blockingAwait(_ body: @escaping @Sendable () async throws -> Void) throws {
    final class Box: @unchecked Sendable { var error: (any Error)? }
    let box = Box()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { try await body() } catch { box.error = error }
        done.signal()
    }
    done.wait()
    if let error = box.error { throw error }
}

/// Why a testkit command stopped: its arguments, or what went wrong.
enum TestkitError: Error, CustomStringConvertible {
    case usage(String)
    case failed(String)
    var description: String {
        switch self {
        case let .usage(u): return "usage: jobrun-testkit \(u)"
        case let .failed(why): return why
        }
    }
}

let commands: [String: TestkitCommand] =
    postboxCommands
    .merging(mediaBoxCommands) { first, _ in first }
    .merging(cloudCommands) { first, _ in first }
    .merging(retentionCommands) { first, _ in first }
    .merging(objectStorageCommands) { first, _ in first }
    .merging(fixtureCommands) { first, _ in first }

let args = Array(CommandLine.arguments.dropFirst())
guard let name = args.first, let command = commands[name] else {
    FileHandle.standardError.write(Data("usage: jobrun-testkit <\(commands.keys.sorted().joined(separator: "|"))> [args…]\n".utf8))
    exit(64)
}
do {
    try command(Array(args.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("jobrun-testkit \(name): \(error)\n".utf8))
    exit(1)
}
