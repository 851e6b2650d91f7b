import Foundation

/// Runs a peer tool (curl, aria2c, aws) to completion with its output discarded: `argv[0]` is
/// an absolute path or a name looked up on PATH. A non-zero exit is an error naming the tool.
/// `environment` replaces this process's; `showErrors` lets the tool's stderr through.
func runPeerTool(_ argv: [String], environment: [String: String]? = nil, showErrors: Bool = false) throws {
    let p = Process()
    if argv[0].hasPrefix("/") {
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
    } else {
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
    }
    if let environment { p.environment = environment }
    p.standardOutput = FileHandle.nullDevice
    if !showErrors { p.standardError = FileHandle.nullDevice }
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw BenchError("\(argv.prefix(5).joined(separator: " ")) … exited with \(p.terminationStatus)") }
}

/// Runs `/bin/sh -c command` (a peer's pipeline) and returns the integer it prints last (0 if
/// none).
func runPeerShell(_ command: String) throws -> Int {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/sh")
    p.arguments = ["-c", command]
    let pipe = Pipe()
    p.standardOutput = pipe
    try p.run()
    let out = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return Int(String(decoding: out, as: UTF8.self).split(whereSeparator: \.isNewline).last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
}

/// Peak RSS of peer processes, each measured by GNU time (`/usr/bin/time -f %M`) into a file per
/// tag in `directory`: `RUSAGE_CHILDREN` would report this process's size for children forked
/// from it. Where GNU time is missing, the rusage figure stands in.
struct PeerRSS {
    let directory: String
    let available = FileManager.default.isExecutableFile(atPath: "/usr/bin/time")

    private func file(_ tag: String) -> String { directory + "/rss-" + tag }

    /// The prefix of a shell command measured under `tag` (appending: a pipeline's processes
    /// each add a line).
    func shellPrefix(_ tag: String) -> String { available ? "/usr/bin/time -a -o '\(file(tag))' -f %M " : "" }

    /// `argv` measured under `tag`, for `Process` (appending, as `shellPrefix`).
    func argv(_ tag: String, _ argv: [String]) -> [String] { available ? ["/usr/bin/time", "-a", "-o", file(tag), "-f", "%M"] + argv : argv }

    /// Forgets what earlier runs measured under `tag`.
    func reset(_ tag: String) { unlink(file(tag)) }

    /// The largest peak of the processes measured under `tag`, in MiB.
    func peakMiB(_ tag: String) -> Double {
        guard available, let text = try? String(contentsOfFile: file(tag), encoding: .utf8) else { return childrenPeakRSSMiB() }
        return Double(text.split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.max() ?? 0) / 1024
    }
}
