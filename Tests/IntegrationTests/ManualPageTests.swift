import Foundation
import TestSupport
import XCTest

/// `docs/man/jobrun.1` is generated from the command-line parser by swift-argument-parser's
/// `generate-manual` plugin. The plugin cannot run inside `swift test`, so this test checks the
/// committed page against the built binary's own help instead: every subcommand and every long
/// option `--help` lists must be in the manual, so a new command or option fails here until the
/// page is regenerated.
final class ManualPageTests: XCTestCase {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/man/jobrun.1").standardized
    static let regenerate = """
        regenerate it: swift package generate-manual --date 2026-11-24 && \
        cp .build/plugins/GenerateManual/outputs/jobrun/jobrun.1 docs/man/jobrun.1
        """

    func testTheManualPageNamesEverySubcommandAndOption() throws {
        let jobrun = try Products.builtExecutable("jobrun")
        let manual = try String(contentsOf: Self.page, encoding: .utf8)
        let subcommands = try section("SUBCOMMANDS", of: ChildProcess.run(jobrun, ["--help"]).stdout)
            .compactMap { line -> String? in
                let words = line.split(separator: " ")
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let first = words.first else { return nil }
                return String(first)
            }
            .filter { $0 != "help" }
        XCTAssertGreaterThanOrEqual(subcommands.count, 10, "cannot read the subcommands from jobrun --help")
        for subcommand in subcommands {
            XCTAssertTrue(manual.contains(".It Em \(subcommand)"), "docs/man/jobrun.1 lacks `\(subcommand)`; \(Self.regenerate)")
            let help = try ChildProcess.run(jobrun, [subcommand, "--help"]).stdout
            for option in longOptions(in: try section("OPTIONS", of: help)) {
                // mdoc writes `--name` as `Fl -name`, and `-n, --name` as `Fl n , -name`.
                XCTAssertTrue(
                    manual.contains("Fl -\(option)") || manual.contains(" , -\(option)"),
                    "docs/man/jobrun.1 lacks `\(subcommand) --\(option)`; \(Self.regenerate)")
            }
        }
    }

    /// The lines of `--help`'s section `name` (up to the next heading).
    private func section(_ name: String, of help: String) throws -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try XCTUnwrap(lines.firstIndex(of: "\(name):"), "no \(name) in:\n\(help)")
        return Array(lines[(start + 1)...].prefix { !$0.isEmpty })
    }

    /// `--name` of each option line (the first word of a line that starts with `-`).
    private func longOptions(in lines: [String]) -> [String] {
        lines.compactMap { line in
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("-"), let long = trimmed.split(separator: " ").first(where: { $0.hasPrefix("--") }) else { return nil }
            let name = long.dropFirst(2).prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            return ["help", "version"].contains(String(name)) ? nil : String(name)
        }
    }
}
