import Foundation
import XCTest

@testable import Jobs

/// Every section of every file jobrun reads is declared once, and decoded by one decoder.
final class ConfigSchemaTests: XCTestCase {
    /// A `Param` declared in a kind or section but left out of its `parameters` would be read
    /// as its default whatever the file says: every declaration in the sources must be listed.
    func testEveryDeclaredParamIsListed() throws {
        var declared: [String: [String]] = [:]
        let sources = TestPaths.repositoryRoot.appendingPathComponent("Sources")
        let files = try XCTUnwrap(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let typePattern = try NSRegularExpression(pattern: #"^(?:public |private |internal )?(?:struct|enum|final class|class|extension) (\w+)"#)
        let paramPattern = try NSRegularExpression(pattern: #"static let (\w+) = (?:Param|OptionalParam|SectionParam)<"#)
        for case let url as URL in files where url.pathExtension == "swift" {
            var current = ""
            for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
                let text = String(line)
                let range = NSRange(text.startIndex..., in: text)
                if let match = typePattern.firstMatch(in: text, range: range), let name = Range(match.range(at: 1), in: text) {
                    current = String(text[name])
                } else if let match = paramPattern.firstMatch(in: text, range: range), let name = Range(match.range(at: 1), in: text) {
                    declared[current, default: []].append(String(text[name]))
                }
            }
        }
        var listed: [String: [ParamSpec]] = [:]
        for kind in JobKindRegistry.shipped.kinds { listed[String(describing: type(of: kind))] = kind.parameters.map(\.spec) }
        for section in ConfigurationReference.sections { listed[String(describing: section)] = section.parameters.map(\.spec) }
        XCTAssertFalse(declared.isEmpty)
        for (type, names) in declared {
            let specs = try XCTUnwrap(listed[type], "\(type) declares \(names) but is neither a shipped kind nor a section of ConfigurationReference")
            XCTAssertEqual(specs.count, names.count, "\(type) declares \(names.sorted()) but lists \(specs.map(\.name).sorted())")
            XCTAssertEqual(Set(specs.map(\.name)).count, specs.count, "\(type) lists a key twice")
        }
    }

    func testEverySectionIsWellFormed() {
        for section in ConfigurationReference.sections {
            for spec in section.parameters.map(\.spec) {
                XCTAssertFalse(spec.doc.isEmpty, "\(section).\(spec.name) needs a doc line")
                XCTAssertFalse(spec.required && spec.defaultValue != nil, "\(section).\(spec.name): required with a default")
                if let variable = spec.environment { XCTAssertTrue(variable.hasPrefix("JOBRUN_"), variable) }
            }
        }
    }

    func testSizesAndBoundsUseOneVocabulary() {
        XCTAssertEqual(try ByteSize.parse("1PB").get(), 1_000_000_000_000_000)
        XCTAssertEqual(try ByteSize.parse("1PiB").get(), 1 << 50)
        XCTAssertEqual(ParamDecoder.format(1e15, .byteSize), "1PB")
        XCTAssertEqual(ParamDecoder.format(65_536, .byteSize), "64KiB")
        var errors: [JobFileError] = []
        let node = ConfigNode(value: .scalar("2PB", .string), position: SourcePosition(file: "f", line: 1, column: 1))
        XCTAssertNil(ParamDecoder.decode(node, as: .byteSize, range: 65_536...1e15, name: "maxSize", errors: &errors))
        XCTAssertEqual(errors.map(\.description), ["f:1:1: 'maxSize' is out of range: '2PB' (expected a value in 64KiB…1PB)"])
    }

    /// A value in an error is at most a short escaped prefix; a file name is escaped.
    func testValuesAndFileNamesAreEscapedAndCutShort() {
        let secret = "SECRET size hunter2 " + String(repeating: "x", count: 250_000)
        let yaml = "name: t\nkind: time-based-cleanup\ntimeout: \"\(secret)\"\nparams: {maxSize: \"\(secret)\"}\n"
        XCTAssertThrowsError(try JobFile.parse(yaml: yaml, file: "evil\n\u{1B}[31mname.yaml")) { error in
            let text = "\(error)"
            XCTAssertFalse(text.contains("hunter2"), text)
            XCTAssertFalse(text.contains("\u{1B}"), text)
            XCTAssertFalse(text.contains("\n\u{1B}"), text)
            XCTAssertTrue(text.contains("evil\\n\\e[31mname.yaml:3:"), text)
            XCTAssertLessThan(text.utf8.count, 2_000, text)
        }
    }
}
