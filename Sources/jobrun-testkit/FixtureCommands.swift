import Foundation
import ServerFixtures

/// Child-process commands for the test fixtures themselves:
///
/// - `leave-temporary-directories`: make a `TemporaryDirectory` that is never released (as
///   XCTest holds a test case's fixtures until the process ends) and a folder registered with
///   `TemporaryDirectory.removeAtExit`, print `kept <path>` for each that exists, and exit
///   normally; the test then checks that both are gone.
let fixtureCommands: [String: TestkitCommand] = [
    "leave-temporary-directories": leaveTemporaryDirectories
]

private func leaveTemporaryDirectories(_ args: [String]) throws {
    let held = TemporaryDirectory(prefix: "testkit-held")
    _ = Unmanaged.passRetained(held)
    try Data("bytes".utf8).write(to: URL(fileURLWithPath: held.file("inside")))
    let registered = FileManager.default.temporaryDirectory.appendingPathComponent("testkit-registered-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: registered, withIntermediateDirectories: false)
    TemporaryDirectory.removeAtExit(registered)
    for path in [held.path, registered] where FileManager.default.fileExists(atPath: path) {
        emit("kept \(path)")
    }
}
