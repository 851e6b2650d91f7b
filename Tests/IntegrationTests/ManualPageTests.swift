import Foundation
import TestSupport
import XCTest

/// `docs/man/jobrun.1` is generated from the command-line parser (swift-argument-parser's
/// `generate-manual`, built with the package), so the manual says what `--help` says.
final class ManualPageTests: XCTestCase {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/man/jobrun.1").standardized

    func testTheManualPageIsGeneratedFromTheParser() throws {
        let out = TemporaryDirectory()
        let r = try ChildProcess.run(
            Products.builtExecutable("generate-manual"),
            [Products.builtExecutable("jobrun"), "--date", "2026-11-24", "--output-directory", out.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let generated = try String(contentsOfFile: out.file("jobrun.1"), encoding: .utf8)
        for subcommand in ["run", "schedule", "validate", "status", "pause", "resume", "units", "enqueue-upload", "demo"] {
            XCTAssertTrue(generated.contains(".It Em \(subcommand)"), "the manual lacks \(subcommand)")
        }
        let committed = try? String(contentsOf: Self.page, encoding: .utf8)
        if ProcessInfo.processInfo.environment["JOBRUN_REGENERATE_MAN"] == "1", committed != generated {
            try generated.write(to: Self.page, atomically: true, encoding: .utf8)
            return
        }
        XCTAssertEqual(committed, generated, "docs/man/jobrun.1 is out of date: JOBRUN_REGENERATE_MAN=1 swift test --filter ManualPageTests")
    }
}
