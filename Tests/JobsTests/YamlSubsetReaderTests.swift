import Foundation
import TestSupport
import XCTest

@testable import Jobs

/// `YamlSubsetReader` gives exactly what composing with Yams gives, or declines: checked on the
/// shipped files, on generated files in the subset, and on those files with bytes changed at
/// random (where it must decline whatever it does not read exactly as Yams would).
final class YamlSubsetReaderTests: XCTestCase {
    func testShippedJobFilesAreReadAsYamsReadsThem() throws {
        let directory = TestPaths.repositoryRoot.appendingPathComponent("jobs")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }.sorted()
        XCTAssertFalse(names.isEmpty)
        for name in names {
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            let read = YamlSubsetReader.read(text, file: name)
            XCTAssertNotNil(read, "\(name) is in the subset: an idle run reads it without Yams")
            XCTAssertEqual(read, try ConfigNode.compose(yaml: text, file: name), name)
        }
    }

    func testPositionsTypesAndQuoting() throws {
        let text = """
            # leading comment
            name: idle   # trailing comment
            schedule: "*/5 * * * *"
            when: '@hourly'
            retry:

              backoffLimit: 2
              backoff:  # nested
                initial: 30s
            accounts: [0, -1, 1.5, x_y]
            empty: []
            on: yes
            nothing: ~
            """
        let node = try XCTUnwrap(YamlSubsetReader.read(text, file: "f.yaml"))
        XCTAssertEqual(node, try ConfigNode.compose(yaml: text, file: "f.yaml"))
        guard case .mapping(let entries) = node.value else { return XCTFail("not a mapping") }
        XCTAssertEqual(entries.map(\.key), ["name", "schedule", "when", "retry", "accounts", "empty", "on", "nothing"])
        XCTAssertEqual(node.position, SourcePosition(file: "f.yaml", line: 2, column: 1))
        XCTAssertEqual(entries[0].value, ConfigNode(value: .scalar("idle", .string), position: SourcePosition(file: "f.yaml", line: 2, column: 7)))
        XCTAssertEqual(entries[1].value.quoted, true)
        XCTAssertEqual(entries[1].value.position.column, 11)
        guard case .mapping(let retry) = entries[3].value.value else { return XCTFail("retry is not a mapping") }
        XCTAssertEqual(retry[0].keyPosition, SourcePosition(file: "f.yaml", line: 7, column: 3))
        guard case .sequence(let accounts) = entries[4].value.value else { return XCTFail("accounts is not a list") }
        XCTAssertEqual(accounts.map { $0.value }, [.scalar("0", .int), .scalar("-1", .int), .scalar("1.5", .float), .scalar("x_y", .string)])
        XCTAssertEqual(accounts[2].position.column, 19)
        XCTAssertEqual(entries[6].value.value, .scalar("yes", .bool))
        XCTAssertEqual(entries[7].value.value, .scalar("~", .null))
    }

    /// What Yams must decide, or refuse, is left to it.
    func testDeclinesWhatItDoesNotRead() {
        let declined = [
            "", "# only a comment\n", "---\nname: x\n", "%YAML 1.1\n---\nname: x\n", "name: x\n...\n",
            "name: x\nname: y\n",  // a duplicate key: Yams reports it
            "name:\n", "a:\nb: 1\n",  // an empty value
            "name: a\n  continued\n",  // a scalar over two lines
            "a:\n    b: 1\n  c: 2\n",  // a key between two indentations
            "list:\n  - 1\n", "list:\n- 1\n", "flow: {a: 1}\n", "flow: [a, [b]]\n", "flow: [a,\n  b]\n", "flow: [a, ]\n",
            "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: |\n  text\n", "a: >\n  text\n", "a: \"x\\ty\"\n", "a: 'it''s'\n",
            "a: b: c\n", "a: b:\n", "\"quoted key\": 1\n", "? complex\n", "a:\tb\n", "a: b\r\n", "a: caf\u{e9}\n", "\u{feff}a: b\n",
            "a: \"unclosed\n", "a: \"x\"y\n", "a: [b]c\n", "a: [b]#c\n", "a: @x\n", "a: `x`\n", "a: - b\n", "a:b\n",
        ]
        for text in declined { XCTAssertNil(YamlSubsetReader.read(text, file: "f.yaml"), text.debugDescription) }
        func nested(_ depth: Int) -> String {
            (0..<depth).map { String(repeating: " ", count: $0) + "k\($0):" }.joined(separator: "\n") + " 1\n"
        }
        XCTAssertNotNil(YamlSubsetReader.read(nested(YamlSubsetReader.maximumDepth), file: "f.yaml"))
        XCTAssertNil(YamlSubsetReader.read(nested(YamlSubsetReader.maximumDepth + 1), file: "f.yaml"), "too deep: left to Yams")
    }

    /// Files built from the subset's parts are all read, and read as Yams reads them; the same
    /// files with bytes changed are read as Yams reads them or declined.
    func testAgreesWithYamsOnGeneratedAndMutatedFiles() {
        var random = SeededGenerator(seed: 0x5EED_CAFE)
        var mutatedRead = 0
        for round in 0..<3_000 {
            let text = Self.generatedFile(&random)
            let read = YamlSubsetReader.read(text, file: "g.yaml")
            XCTAssertNotNil(read, "generated file \(round) declined:\n\(text)")
            XCTAssertEqual(read, try? ConfigNode.compose(yaml: text, file: "g.yaml"), "generated file \(round):\n\(text)")
            for _ in 0..<8 {
                let mutated = Self.mutated(text, &random)
                guard let read = YamlSubsetReader.read(mutated, file: "g.yaml") else { continue }
                mutatedRead += 1
                XCTAssertEqual(read, try? ConfigNode.compose(yaml: mutated, file: "g.yaml"), "mutated file:\n\(mutated)")
            }
        }
        XCTAssertGreaterThan(mutatedRead, 2_000, "the mutations should leave many files in the subset")
    }

    private static let words = [
        "0", "1", "-7", "+3", "42", "0x1F", "0o17", "1_000", "1.5", "-.5", ".inf", "1e5", "true", "False", "yes", "off", "on", "~", "null",
        "30s", "10m", "1h30m", "7d", "1GiB", "512MiB", "2001-12-14", "12:30", "time-based-cleanup", "Forbid", "v1.2.3", "x_y", "a.b-c",
    ]
    /// The words a flow list of the subset holds (no `:`, no `~`, no `-.5`).
    private static let listWords = words.filter { $0.allSatisfy { $0.isLetter || $0.isNumber || "_.-+".contains($0) } && !$0.hasPrefix("-.") }
    private static let texts = [
        "Nightly cleanup at 03:30, after sync.", "a#b", "C# and F#", "x=y", "(paren)", "50% off", "a, b", "http://host:80/path", "it's", "say \"hi\"",
        "a [b] {c}", "~/files", "$HOME", "a:b", "trailing   ",
    ]
    private static let quotedTexts = ["*/15 * * * *", "@hourly", "a: b", "# not a comment", "", " spaced ", "x'y", "[a]", "5 4 * * 1-5"]
    private static let keys = ["name", "kind", "params", "maxSize", "backoff-limit", "a.b", "_x", "k1", "9", "on", "yes", "ttl_2"]

    private static func generatedFile(_ random: inout SeededGenerator) -> String {
        var lines: [String] = []
        if random.below(4) == 0 { lines.append("# a job file") }
        mapping(indent: 0, depth: 0, into: &lines, &random)
        return lines.joined(separator: "\n") + (random.below(2) == 0 ? "\n" : "")
    }

    private static func mapping(indent: Int, depth: Int, into lines: inout [String], _ random: inout SeededGenerator) {
        let pad = String(repeating: " ", count: indent)
        var used: Set<String> = []
        for _ in 0..<(1 + random.below(5)) {
            var key = keys[random.below(keys.count)]
            while !used.insert(key).inserted { key += "x" }
            if random.below(8) == 0 { lines.append(random.below(2) == 0 ? "" : pad + "  # note") }
            let comment = random.below(5) == 0 ? "   # why" : ""
            if depth < 3 && random.below(4) == 0 {
                lines.append(pad + key + ":" + comment)
                mapping(indent: indent + 1 + random.below(4), depth: depth + 1, into: &lines, &random)
                continue
            }
            let value: String
            switch random.below(5) {
            case 0: value = words[random.below(words.count)]
            case 1: value = texts[random.below(texts.count)].trimmingCharacters(in: .whitespaces)
            case 2:
                let text = quotedTexts[random.below(quotedTexts.count)]
                value = text.contains("'") ? "\"\(text)\"" : (random.below(2) == 0 ? "'\(text)'" : "\"\(text)\"")
            case 3:
                let items = (0..<random.below(4)).map { _ in listWords[random.below(listWords.count)] }
                value = "[" + items.joined(separator: random.below(2) == 0 ? ", " : ",") + "]"
            default: value = words[random.below(words.count)] + (random.below(2) == 0 ? "  " : "")
            }
            lines.append(pad + key + ":" + String(repeating: " ", count: 1 + random.below(2)) + value + comment)
        }
    }

    private static let mutationBytes: [UInt8] = Array(" :#-\"'[],\n\t&*{}|>!%@?.a1~".utf8)

    private static func mutated(_ text: String, _ random: inout SeededGenerator) -> String {
        var bytes = Array(text.utf8)
        for _ in 0..<(1 + random.below(2)) {
            let at = random.below(bytes.count + 1)
            switch random.below(3) {
            case 0: bytes.insert(mutationBytes[random.below(mutationBytes.count)], at: at)
            case 1: if at < bytes.count { bytes.remove(at: at) }
            default: if at < bytes.count { bytes[at] = mutationBytes[random.below(mutationBytes.count)] }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
