import Foundation
import TestSupport

/// Paths the tests need: the repository root (for `jobs/`, `cron/`) and fresh temp directories.
enum TestPaths {
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// A new folder, removed when the test process exits.
    static func makeTempDirectory(_ label: String = #function) throws -> URL {
        let name = "jobs-tests-\(label.filter { $0.isLetter || $0.isNumber })-\(UUID().uuidString.prefix(8))"
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        TemporaryDirectory.removeAtExit(url.path)
        return url
    }

    /// Full path of an executable on PATH, or nil.
    static func which(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs a process; returns (status, stdout, stderr).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes fully before waiting, so a large output cannot block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}
