import Foundation
import TestSupport
import XCTest

@testable import Jobs

/// The state files under `alerts/` and `suspended/` are read through the configuration decoder:
/// what jobrun writes reads back, and anything else reads as "no state" without a hang.
final class RunStateFileTests: XCTestCase {
    private func root() -> (TemporaryDirectory, DataRoot) {
        let dir = TemporaryDirectory()
        chmod(dir.path, 0o700)
        return (dir, DataRoot(path: dir.path))
    }

    func testAFailureStreakReadsBackAsWritten() {
        let (dir, root) = root()
        _ = dir
        let state = AlertState(root: root, job: "nightly")
        XCTAssertTrue(state.recordFailure() == (1, false))
        XCTAssertTrue(state.recordFailure() == (2, false))
        state.markAlerted()
        XCTAssertTrue(state.recordFailure() == (3, true))
        XCTAssertEqual(state.clear(), 3)
        XCTAssertNil(state.clear())
    }

    func testAPauseNoteReadsBackAsWritten() throws {
        let (dir, root) = root()
        _ = dir
        let suspension = JobSuspension(root: root)
        let when = Date(timeIntervalSince1970: 1_800_000_000)
        try suspension.pause("nightly", note: "disk swap: \"quoted\", {braces}\nand a second line", date: when)
        XCTAssertEqual(suspension.pause(of: "nightly"), .paused(since: when, note: "disk swap: \"quoted\", {braces}\nand a second line"))
        XCTAssertTrue(try suspension.resume("nightly"))
        XCTAssertNil(suspension.pause(of: "nightly"))
    }

    /// A file that is not what jobrun wrote — another format, a huge file, a FIFO — is no
    /// streak (alerts) or a pause without a note (suspended): never a crash or a hang.
    func testForeignStateFilesReadAsNoState() throws {
        let (dir, root) = root()
        try FileManager.default.createDirectory(atPath: root.alerts.path, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root.suspended.path, withIntermediateDirectories: true)
        try "root:$6$salt$hash:19000:0:99999:7:::\n".write(toFile: root.alerts.path + "/shadow", atomically: true, encoding: .utf8)
        XCTAssertNil(AlertState(root: root, job: "shadow").clear())
        try String(repeating: "{\"failures\": 1, ", count: 10_000).write(toFile: root.alerts.path + "/big", atomically: true, encoding: .utf8)
        XCTAssertNil(AlertState(root: root, job: "big").clear())
        XCTAssertEqual(mkfifo(root.suspended.path + "/fifo", 0o600), 0)
        let started = Date()
        XCTAssertEqual(JobSuspension(root: root).pause(of: "fifo"), .paused(since: nil, note: nil))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        try "{\"note\": [1, 2]}\n".write(toFile: root.suspended.path + "/odd", atomically: true, encoding: .utf8)
        XCTAssertEqual(JobSuspension(root: root).pause(of: "odd"), .paused(since: nil, note: nil))
        _ = dir
    }
}
