import Foundation
import Logging
import XCTest

@testable import Jobs

/// swift-log's `Logger` writes through `LogSink`: the same JSON lines and the same redaction.
final class JobLogHandlerTests: XCTestCase {
    func testSwiftLogEventsBecomeRedactedJobLines() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = try LogSink(configuration: .init(directory: directory, process: "run", console: .off))
        var logger = Logger(label: "transport.retry") { JobLogHandler(label: $0, sink: sink) }
        logger[metadataKey: "job"] = "sync-history"
        let hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
        logger.warning("retrying after a reset", metadata: ["attempt": "2", "authorization": "Bearer abc", "url": "https://dc1/x?token=\(hexKey)"])
        logger.debug("below the sink's level")
        let lines = try String(contentsOf: sink.fileURL!, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "debug is below the sink's info level: \(lines)")
        let event = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        XCTAssertEqual(event["event"] as? String, "transport.retry")
        XCTAssertEqual(event["msg"] as? String, "retrying after a reset")
        XCTAssertEqual(event["level"] as? String, "warning")
        XCTAssertEqual(event["job"] as? String, "sync-history")
        XCTAssertEqual(event["attempt"] as? String, "2")
        XCTAssertFalse(lines[0].contains("Bearer abc") || lines[0].contains(hexKey), "the sink's redaction applies: \(lines[0])")
    }
}
