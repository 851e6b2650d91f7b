import Foundation
import TestSupport
import XCTest

/// `docs/man/jobrun.1` is generated from the command-line parser by swift-argument-parser's
/// `generate-manual` plugin, then its EXIT STATUS, ENVIRONMENT and FILES sections by
/// `jobrun manual-sections` (`scripts/generate-manual.sh`). The plugin cannot run inside
/// `swift test`, so these tests check the committed page against the built binary instead:
/// every subcommand and every long option `--help` lists must be in the manual, and the
/// reference sections must be what the binary prints now. The docs' exit-code tables must name
/// exactly the codes the binary's `--help` names.
final class ManualPageTests: XCTestCase {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/man/jobrun.1").standardized
    static let regenerate = "regenerate it: scripts/generate-manual.sh"
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

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

    func testTheReferenceSectionsAreTheBinarysOwn() throws {
        let jobrun = try Products.builtExecutable("jobrun")
        let manual = try String(contentsOf: Self.page, encoding: .utf8)
        let sections = try ChildProcess.run(jobrun, ["manual-sections"]).stdout
        for heading in [".Sh \"EXIT STATUS\"", ".Sh ENVIRONMENT", ".Sh FILES"] {
            XCTAssertTrue(sections.contains(heading + "\n"), "manual-sections prints \(heading)")
        }
        XCTAssertTrue(manual.hasSuffix(sections), "docs/man/jobrun.1 ends with what `jobrun manual-sections` prints; \(Self.regenerate)")
        XCTAssertEqual(manual.components(separatedBy: ".Sh \"EXIT STATUS\"").count, 2, "one EXIT STATUS section (the plugin's generic one replaced)")
        // Every JOBRUN_ variable the sources name is in ENVIRONMENT.
        let environment = try XCTUnwrap(sections.components(separatedBy: ".Sh ENVIRONMENT").last?.components(separatedBy: ".Sh FILES").first)
        let grep = try ChildProcess.run(
            "/bin/sh", ["-c", "grep -rhoE '\"JOBRUN_[A-Z0-9_]+\"' \"$0/Sources/Jobs\" \"$0/Sources/jobrun\" | sort -u", Self.repository])
        let named = grep.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        XCTAssertGreaterThan(named.count, 20, grep.stderr)
        for variable in named {
            XCTAssertTrue(environment.contains("Ev \(variable)\n") || environment.contains("Ev \(variable),"), "ENVIRONMENT lacks \(variable)")
        }
    }

    func testTheDocsExitCodeTablesNameExactlyTheBinarysCodes() throws {
        let jobrun = try Products.builtExecutable("jobrun")
        let sections = try ChildProcess.run(jobrun, ["manual-sections"]).stdout
        let exitStatus = try XCTUnwrap(sections.components(separatedBy: ".Sh ENVIRONMENT").first)
        let codes = Set(exitStatus.split(separator: "\n").compactMap { $0.hasPrefix(".It ") ? Int($0.dropFirst(4)) : nil })
        XCTAssertEqual(codes, [0, 1, 64, 66, 69, 73, 74, 75, 78])
        let help = try ChildProcess.run(jobrun, ["--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
        for code in codes { XCTAssertTrue(help.contains(" \(code) "), "--help names exit code \(code): \(help)") }
        for doc in ["docs/operations.md", "docs/job-files.md"] {
            let text = try String(contentsOfFile: Self.repository + "/" + doc, encoding: .utf8)
            let table = text.components(separatedBy: "\n## Exit codes")[1].components(separatedBy: "\n## ")[0]
            let rows = Set(
                table.split(separator: "\n").compactMap { line -> Int? in
                    guard line.hasPrefix("| ") else { return nil }
                    return Int(line.dropFirst(2).prefix { $0.isNumber })
                })
            XCTAssertEqual(rows, codes, "\(doc)'s exit-code table names exactly the codes jobrun uses")
        }
        let readme = try String(contentsOfFile: Self.repository + "/README.md", encoding: .utf8)
        let sentence = try XCTUnwrap(readme.components(separatedBy: "Exit codes follow sysexits:").dropFirst().first?.components(separatedBy: ". ").first)
        let listed = Set(sentence.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) })
        XCTAssertEqual(listed, codes, "README's exit-code sentence names exactly the codes jobrun uses")
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
