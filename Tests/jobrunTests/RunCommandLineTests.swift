import ArgumentParser
import XCTest

@testable import jobrun

/// `RunCommandLine` reads `jobrun run …` without ArgumentParser; it must read every line it
/// takes exactly as ArgumentParser does, and leave every other line to it.
final class RunCommandLineTests: XCTestCase {
    func testReadsPlainLinesAsArgumentParserDoes() throws {
        let lines: [[String]] = [
            ["sync-history"],
            ["jobs/cleanup.yaml", "--root", "/var/lib/jobrun", "--jobs-dir", "/etc/jobrun/jobs", "--scheduled"],
            ["--root=/r", "--jobs-dir=/j", "upload-queue", "--json", "--dry-run"],
            ["cleanup", "-q", "--log-format", "json", "--log-level=debug", "--log-file", "/tmp/x.log"],
            ["-v", "cleanup", "--log-file=-"],
            ["cleanup", "--quiet", "--verbose", "--root", "relative/root"],
            ["cleanup", "--log-level=-x"],
        ]
        for line in lines {
            let fast = try XCTUnwrap(RunCommandLine.parse(line), "not read: \(line)")
            XCTAssertEqual(fast, try RunCommand.parse(line).request, "\(line)")
        }
    }

    func testLeavesOtherLinesToArgumentParser() {
        let lines: [[String]] = [
            [], ["--help"], ["cleanup", "-h"], ["cleanup", "--bogus"], ["cleanup", "-qv"], ["cleanup", "--", "x"],
            ["a", "b"], ["cleanup", "--root"], ["cleanup", "--root", "--json"], ["cleanup", "--root", "a", "--root", "b"],
            ["cleanup", "-q", "--quiet"], ["cleanup", "--json=yes"], ["cleanup", "--root="], ["cleanup", "--version"], [""],
        ]
        for line in lines { XCTAssertNil(RunCommandLine.parse(line), "\(line)") }
    }

    /// A new option on `run` that the table does not know would send every line that uses it
    /// through the slow path, and would stop the process on the fast one when read.
    func testKnowsEveryOptionRunDeclares() {
        let help = RunCommand.helpMessage(columns: 1000)
        let declared = Set(
            help.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" || $0 == "[" || $0 == "]" }).map(String.init).filter {
                $0.hasPrefix("-") && $0.count > 1 && $0.dropFirst().allSatisfy { $0.isLetter || $0 == "-" }
            })
        let known = Set((RunCommandLine.valueOptions.flatMap(\.names)) + RunCommandLine.flags.flatMap(\.names))
        XCTAssertEqual(declared.subtracting(["-h", "--help", "--version"]), known)
    }
}
