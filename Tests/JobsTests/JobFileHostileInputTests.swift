import Foundation
import TestSupport
import XCTest

@testable import Jobs

/// Job files written to stall or mislead the runner: every `run` and `schedule` reads every file
/// of the jobs directory, so a hostile file must be refused at the cost of its own size.
final class JobFileHostileInputTests: XCTestCase {
    /// Nested aliases ("billion laughs"): 9 levels of 10× fan-out expand to 10⁹ values.
    func testAliasBombIsRefusedWithoutExpandingIt() throws {
        var yaml = "name: bomb\nkind: upload-queue\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            yaml += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        let started = Date()
        XCTAssertThrowsError(try JobFile.parse(yaml: yaml, file: "bomb.yaml")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("anchors and aliases are not supported"), text)
            XCTAssertLessThan(text.count, 20_000, "one error per alias written, not per expansion")
        }
        // Expanding it would take minutes and gigabytes; refusing it takes milliseconds.
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
    }

    /// Found by `jobrun-bench fuzz`: an alias used as a mapping key (`? *a8` inside a flow
    /// sequence) made the YAML library hash the whole expansion to look for duplicate keys,
    /// before any check of ours ran — 0.8 s at 7 levels, minutes at 9.
    func testAnAliasUsedAsAKeyIsRefusedBeforeTheParserHashesIt() throws {
        var yaml = "name: bomb\nkind: upload-queue\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...8 {
            yaml += "a\(level): &a\(level) [\(Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", "))]\n"
        }
        yaml += "a9: [x, ? *a8]\n"
        let started = Date()
        XCTAssertThrowsError(try JobFile.parse(yaml: yaml, file: "bomb.yaml")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("bomb.yaml:4:10: YAML aliases are not supported"), text)  // the first alias
            XCTAssertTrue(text.contains("bomb.yaml:3:5: YAML anchors and aliases are not supported"), text)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    /// A short run of the decoder fuzzer (`jobrun-bench fuzz`): every property it checks holds
    /// for the inputs of a fixed seed, so a regression of any finding above fails here.
    func testTheDecoderFuzzerFindsNothing() throws {
        let out = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let jobs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../jobs").standardized.path
        let result = try ChildProcess.run(
            Products.builtExecutable("jobrun-bench"), ["fuzz", "--seconds", "5", "--seed", "11", "--jobs-dir", jobs, "--out-dir", out.path])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("no findings"), result.stdout)
    }

    func testLongListsDecodeInLinearTime() throws {
        let ids = (0..<100_000).map(String.init).joined(separator: ", ")
        let started = Date()
        let job = try JobFile.parse(yaml: "name: many\nkind: upload-queue\naccounts: [\(ids)]\n", file: "many.yaml")
        XCTAssertEqual(job.accounts.count, 100_000)
        // A membership test per item made this quadratic: 10¹⁰ comparisons, many minutes.
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
        // Words are still listed once each.
        XCTAssertThrowsError(try JobFile.parse(yaml: "name: w\nkind: sync-history\nparams:\n  peerCategories: [group, private, group]\n", file: "w.yaml")) {
            XCTAssertTrue("\($0)".contains("w.yaml:4:36: 'group' is listed twice in 'peerCategories'"), "\($0)")
        }
    }

    func testEveryDuplicateKeyIsReported() throws {
        let yaml = """
            name: d
            kind: time-based-cleanup
            timeout: 5m
            params:
              maxSize: 1GB
              ttl: 1d
              ttl: 2d
            timeout: 6m
            name: e

            """
        XCTAssertThrowsError(try JobFile.parse(yaml: yaml, file: "d.yaml")) { error in
            let lines = "\(error)".split(separator: "\n").map(String.init)
            XCTAssertEqual(
                lines,
                [
                    "d.yaml:7:3: duplicate key 'ttl' (first at line 6, column 3) (expected each key once per mapping)",
                    "d.yaml:8:1: duplicate key 'timeout' (first at line 3, column 1) (expected each key once per mapping)",
                    "d.yaml:9:1: duplicate key 'name' (first at line 1, column 1) (expected each key once per mapping)",
                ])
        }
    }

    /// A job file that is really something else (a secret reached through a link): errors say
    /// where, never what.
    func testErrorsDoNotEchoTheContentsOfAFileThatIsNotAJobFile() throws {
        let dir = TemporaryDirectory()
        let secret = dir.file("shadow")
        try "root:$y$j9T$Qk9/SecretHashValue: 19000\ndaemon:*:19000:0:99999:7::: x\nname: x\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let link = dir.file("jobs/evil.yaml")
        try FileManager.default.createDirectory(atPath: dir.file("jobs"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: secret)
        let catalog = JobCatalog.load(directory: URL(fileURLWithPath: dir.file("jobs")))
        let text = catalog.errors.map(\.description).joined(separator: "\n")
        XCTAssertFalse(catalog.errors.isEmpty)
        XCTAssertFalse(text.contains("SecretHashValue"), text)
        XCTAssertFalse(text.contains("99999"), text)
        XCTAssertTrue(text.contains("evil.yaml:1:1: unknown key ("), text)
    }

    func testOversizedJobFileIsRefusedBeforeParsing() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("big.yaml")
        let description = String(repeating: "x", count: JobFile.maximumSize)
        try "name: big\nkind: upload-queue\ndescription: \(description)\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try JobFile.load(contentsOf: URL(fileURLWithPath: path))) { error in
            XCTAssertTrue("\(error)".contains("big.yaml:1:1: job file is larger than 256.0 KiB"), "\(error)")
        }
    }
}
