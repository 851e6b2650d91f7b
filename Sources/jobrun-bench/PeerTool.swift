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
