import Foundation

/// Runs an operator's failure hook: `/bin/sh -c <command>` with extra environment variables,
/// its output discarded, ended with SIGTERM (then SIGKILL) when it outlives `timeout`. Waiting
/// happens through the process's termination handler, never by blocking a cooperative thread.
enum FailureHook {
    /// The hook's exit status (128 + signal when it was killed, -1 when it could not start).
    static func run(_ command: String, environment: [String: String], timeout: Duration) async -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let finished = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { p in
            finished.continuation.yield(p.terminationReason == .uncaughtSignal ? 128 + p.terminationStatus : p.terminationStatus)
            finished.continuation.finish()
        }
        do { try process.run() } catch { return -1 }
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            process.terminate()
            try await Task.sleep(for: .seconds(5))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        defer { watchdog.cancel() }
        for await status in finished.stream { return status }
        return -1
    }
}
