import Foundation

/// A real child process for tests: start it, read its output, signal it, wait for its exit.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    /// The two reader threads, each until its pipe's end of file.
    private let readers = DispatchGroup()

    /// Starts `executable` with `arguments` (and extra environment variables).
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        read(stdoutPipe) { $0.out.append($1) }
        read(stderrPipe) { $0.err.append($1) }
    }

    /// Reads `pipe` on a thread of its own until its end of file, appending as bytes arrive (so
    /// `stdout` shows output while the child runs). `wait` joins the readers: output written
    /// just before the child exits is never still on its way when `wait` returns.
    private func read(_ pipe: Pipe, into append: @escaping @Sendable (ChildProcess, Data) -> Void) {
        readers.enter()
        Thread.detachNewThread { [self] in
            let handle = pipe.fileHandleForReading
            while true {
                let d = handle.availableData
                if d.isEmpty { break }
                lock.lock()
                append(self, d)
                lock.unlock()
            }
            readers.leave()
        }
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stdout: String { lock.lock(); defer { lock.unlock() }; return String(decoding: out, as: UTF8.self) }
    public var stderr: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for exit (up to `timeout` seconds, then SIGKILL) and returns the exit status.
    @discardableResult
    public func wait(timeout: TimeInterval = 120) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { signal(SIGKILL); process.waitUntilExit() }
        process.waitUntilExit()
        // The pipes end when the child and everything it started have closed them; a grandchild
        // that keeps one open (a daemon) does not hold the test beyond a few seconds.
        _ = readers.wait(timeout: .now() + 10)
        return process.terminationStatus
    }

    /// Waits until stdout contains `text` (or the timeout passes); true if it appeared.
    public func waitForOutput(_ text: String, timeout: TimeInterval = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stdout.contains(text) { return true }
            if !process.isRunning { return stdout.contains(text) }
            usleep(5_000)
        }
        return false
    }

    /// Runs to completion and returns (status, stdout, stderr).
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 300) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let p = try ChildProcess(executable, arguments, environment: environment)
        let status = p.wait(timeout: timeout)
        return (status, p.stdout, p.stderr)
    }
}
