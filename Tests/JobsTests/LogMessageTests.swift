import Foundation
import XCTest

@testable import Jobs

final class LogMessageTests: XCTestCase {
    func testDurationsPrintAsPrintfDid() {
        // The words of `run.finished` are what `String(format: "%.2f s")` printed, halfway
        // cases (durations ending in 5 ms) included.
        var durations = Array(Int64(0)...Int64(20_000))
        durations += [59_995, 86_399_995, 123_456_785, 3_600_000_005, Int64(Int32.max)]
        for ms in durations {
            XCTAssertEqual(LogMessage.seconds(milliseconds: ms), String(format: "%.2f s", Double(ms) / 1000), "\(ms) ms")
        }
    }

    func testRunFinishedSaysTheOutcomeAndDuration() {
        let text = LogMessage.worded(
            event: "run.finished", job: "idle-cleanup", fields: ["outcome": .string("succeeded"), "duration_ms": .int(1_235)])
        XCTAssertEqual(text, "idle-cleanup finished: succeeded in " + String(format: "%.2f s", 1.235))
    }

    /// An event without a sentence of its own is restated in the JSON `msg`; a line for people,
    /// which shows the event and every field itself, does not repeat it.
    func testAnEventWithoutASentenceIsRestatedOnlyInTheJSONLog() throws {
        let fields: [String: LogValue] = ["files_removed": .int(0), "account": .int(0), "bytes_freed": .int(7)]
        XCTAssertNil(LogMessage.worded(event: "cleanup.report", job: "idle-cleanup", fields: fields))
        XCTAssertEqual(
            LogMessage.restated(event: "cleanup.report", job: "idle-cleanup", fields: fields),
            "idle-cleanup cleanup.report: account=0 bytes_freed=7 files_removed=0")

        let directory = try TestPaths.makeTempDirectory()
        let sink = try LogSink(configuration: .init(directory: directory, process: "jobrun", console: .off))
        sink.write(level: .info, job: "idle-cleanup", run: "r1", event: "cleanup.report", fields: fields)
        let line = try String(contentsOf: directory.appendingPathComponent("jobrun.log"), encoding: .utf8)
        XCTAssertTrue(line.contains("\"msg\":\"idle-cleanup cleanup.report: account=0 bytes_freed=7 files_removed=0\""), line)
    }
}
