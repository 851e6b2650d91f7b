import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a short system command (`ip`, `pg_ctl`, …) to completion with posix_spawn and waitpid:
/// Foundation's `Process` can miss the exit of a short-lived child and wait forever. The output
/// goes to temporary files, read back afterwards.
public enum SystemCommand {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `argv` (an absolute executable path first) and returns its trimmed standard output;
    /// a non-zero exit is a `Failure` naming the command and quoting its standard error.
    @discardableResult
    public static func run(_ argv: [String]) throws -> String {
        let result = try status(argv)
        guard result.status == 0 else {
            throw Failure(description: "\(argv.joined(separator: " ")) failed (exit \(result.status)): \(result.stderr)")
        }
        return result.stdout
    }

    /// Runs `argv` and returns its exit status (128 + signal when killed) and trimmed output.
    public static func status(_ argv: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let scratch = NSTemporaryDirectory() + "jobrun-cmd-\(getpid())-\(UUID().uuidString.prefix(8))"
        let (outPath, errPath) = (scratch + ".out", scratch + ".err")
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var cArgs = argv.map { strdup($0) }
        cArgs.append(nil)
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
        guard rc == 0 else { throw Failure(description: "cannot start \(argv[0]): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, out.trimmingCharacters(in: .whitespacesAndNewlines), err.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The first executable named `name` in `/usr/sbin`, `/sbin`, `/usr/bin`, `/bin` or on PATH.
    public static func find(_ name: String) -> String? {
        first(name, in: ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) ?? onPath(name)
    }

    /// The first executable named `name` in PATH's directories, in PATH's order.
    public static func onPath(_ name: String) -> String? {
        first(name, in: (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init))
    }

    private static func first(_ name: String, in directories: [String]) -> String? {
        directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
