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
        let text = LogMessage.text(
            event: "run.finished", job: "idle-cleanup", fields: ["outcome": .string("succeeded"), "duration_ms": .int(1_235)])
        XCTAssertEqual(text, "idle-cleanup finished: succeeded in " + String(format: "%.2f s", 1.235))
    }
}
