import CloudCore
import Foundation
import TestSupport
import XCTest

@testable import Jobs

/// Every configuration decoder takes time linear in its input, whatever the input holds, and
/// stays quiet about what it reads: errors name keys and positions, never another file's lines.
final class ConfigDecoderScalingTests: XCTestCase {
    /// A decoder and a generator of its input with `n` keys or items.
    struct Shape {
        var name: String
        var input: (Int) -> String
        var decode: (String) -> Void
    }

    static func unknownKey(_ i: Int) -> String { "unknown_key_\(i)_" + String(repeating: "k", count: 40) }

    static var shapes: [Shape] {
        [
            Shape(
                name: "job file, unknown keys", input: { n in "name: t\nkind: upload-queue\n" + (0..<n).map { "\(unknownKey($0)): 1\n" }.joined() },
                decode: { _ = try? JobFile.parse(yaml: $0, file: "t.yaml") }),
            Shape(
                name: "job file, unknown params",
                input: { n in "name: t\nkind: upload-queue\nparams:\n" + (0..<n).map { "  \(unknownKey($0)): 1\n" }.joined() },
                decode: { _ = try? JobFile.parse(yaml: $0, file: "t.yaml") }),
            Shape(
                name: "job file, accounts",
                input: { n in "name: t\nkind: upload-queue\naccounts: [" + (0..<n).map(String.init).joined(separator: ", ") + "]\n" },
                decode: { _ = try? JobFile.parse(yaml: $0, file: "t.yaml") }),
            Shape(
                name: "config.yaml, unknown keys", input: { n in "datacenters: {1: http://127.0.0.1:1}\n" + (0..<n).map { "\(unknownKey($0)): 1\n" }.joined() },
                decode: { _ = try? AccountCloudConfig.parse($0, path: "config.yaml", accountDirectory: "/nonexistent") }),
            Shape(
                name: "config.yaml, datacenters",
                input: { n in "datacenters:\n" + (0..<n).map { "  \($0 + 1): http://127.0.0.1:\($0 % 60000 + 1)\n" }.joined() },
                decode: { _ = try? AccountCloudConfig.parse($0, path: "config.yaml", accountDirectory: "/nonexistent") }),
            Shape(
                name: "cluster.yaml, unknown keys",
                input: { n in "objectStorage:\n  endpoint: http://127.0.0.1:9000\n  bucket: b\n" + (0..<n).map { "  \(unknownKey($0)): 1\n" }.joined() },
                decode: { _ = try? ClusterConfig.parse($0, path: "cluster.yaml", rootDirectory: "/r") }),
            Shape(
                name: "alerts/<job>, keys", input: { n in "{\"failures\": 3, " + (0..<n).map { "\"\(unknownKey($0))\": 1" }.joined(separator: ", ") + "}\n" },
                decode: { _ = try? RunStateFile.decode($0, file: "alerts/t", as: AlertStateSection.self) }),
        ]
    }

    static func seconds(_ body: () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// 1,000, 10,000 and 100,000 keys or items: ten times the input costs about ten times the
    /// time (a quadratic path would cost a hundred), printed as a table.
    func testDecodersAreLinearInTheirInput() {
        var table = "| input | 1,000 | 10,000 | 100,000 | 100k / 10k |\n|---|---|---|---|---|\n"
        for shape in Self.shapes {
            var times: [Double] = []
            for n in [1_000, 10_000, 100_000] {
                let text = shape.input(n)
                // The least of a few runs: a moment the process was not running is not the
                // decoder's cost (the largest input, long enough to average that out, runs once).
                times.append((0..<(n < 100_000 ? 3 : 1)).map { _ in Self.seconds { shape.decode(text) } }.min()!)
            }
            let ratio = times[2] / max(times[1], 1e-4)
            table += "| \(shape.name) | " + times.map { String(format: "%.3f s", $0) }.joined(separator: " | ") + String(format: " | %.1f× |\n", ratio)
            // Linear is 10×; allow for a loaded machine and allocator effects, refuse quadratic (100×).
            XCTAssertLessThan(ratio, 40, "\(shape.name): \(times)")
        }
        print("Configuration decoders, time by input size (least of 2 runs):\n" + table)
    }

    /// The largest legal form of each file jobrun reads — as many keys as its size limit allows —
    /// decodes in under a second (with a margin for an unoptimised build on a loaded machine).
    func testLargestLegalFormsDecodeQuickly() throws {
        let dir = TemporaryDirectory()
        func fill(_ head: String, limit: Int, line: (Int) -> String) -> String {
            var text = head
            var i = 0
            while true {
                let next = line(i)
                if text.utf8.count + next.utf8.count > limit { return text }
                text += next
                i += 1
            }
        }
        let cases: [(String, Double, () -> Void)] = [
            {
                let path = dir.file("big.yaml")
                try? fill("name: t\nkind: upload-queue\n", limit: JobFile.maximumSize) { "\(Self.unknownKey($0)): 1\n" }.write(
                    toFile: path, atomically: true, encoding: .utf8)
                return ("job file (256 KiB)", 1, { _ = try? JobFile.load(contentsOf: URL(fileURLWithPath: path)) })
            }(),
            {
                let text = fill("datacenters: {1: http://127.0.0.1:1}\n", limit: AccountCloudConfig.maxConfigSize) { "\(Self.unknownKey($0)): 1\n" }
                return ("config.yaml (1 MiB)", 4, { _ = try? AccountCloudConfig.parse(text, path: "config.yaml", accountDirectory: "/nonexistent") })
            }(),
            {
                let text = fill("objectStorage:\n", limit: ClusterConfig.maxSize) { "  \(Self.unknownKey($0)): 1\n" }
                return ("cluster.yaml (256 KiB)", 1, { _ = try? ClusterConfig.parse(text, path: "cluster.yaml", rootDirectory: "/r") })
            }(),
            {
                let path = dir.file("alert")
                try? fill("{\"failures\": 3", limit: RunStateFile.maximumSize - 2) { ", \"\(Self.unknownKey($0))\": 1" }.appending("}\n")
                    .write(toFile: path, atomically: true, encoding: .utf8)
                return ("alerts/<job> (64 KiB)", 1, { _ = RunStateFile.read(path, as: AlertStateSection.self) })
            }(),
        ]
        var table = ""
        for (name, budget, decode) in cases {
            let time = min(Self.seconds(decode), Self.seconds(decode))
            table += "| \(name) | \(String(format: "%.3f s", time)) |\n"
            // The budget is 1 s per MiB-limit file in a release build; debug builds run slower, so
            // the bound here is generous while still catching anything superlinear.
            XCTAssertLessThan(time, budget * 5, name)
        }
        print("Largest legal forms:\n" + table)
    }

    /// `config.yaml` pointed at a password database: no line of it reaches the error.
    func testAForeignFileIsNotEchoed() throws {
        let dir = TemporaryDirectory()
        let shadow =
            [
                "root:$y$j9T$Qk9SaltSalt$HashHashHashHash:19000:0:99999:7:::",
                "daemon:*:19000:0:99999:7:::",
                "operator: $6$saltsalt$hunter2hunter2hunter2",
                "alice:$6$abcdefgh$SecretHashValueForAlice:19500:0:99999:7:::",
            ].joined(separator: "\n") + "\n"
        let account = dir.file("account-0")
        try FileManager.default.createDirectory(atPath: account, withIntermediateDirectories: true)
        try shadow.write(toFile: account + "/config.yaml", atomically: true, encoding: .utf8)
        var messages: [String] = []
        do { _ = try AccountCloudConfig.parse(shadow, path: account + "/config.yaml", accountDirectory: account) } catch {
            messages.append(error.message)
        }
        let cluster = dir.file("cluster.yaml")
        try shadow.write(toFile: cluster, atomically: true, encoding: .utf8)
        do { _ = try ClusterConfig.parse(shadow, path: cluster, rootDirectory: dir.path) } catch { messages.append(error.message) }
        XCTAssertEqual(messages.count, 2)
        for message in messages {
            XCTAssertTrue(message.contains(":1:1: this does not look like the file expected here: none of its 4 keys is known"), message)
            for line in shadow.split(separator: "\n") {
                for field in line.split(separator: ":") where field.count >= 6 {
                    XCTAssertFalse(message.contains(field), "\(field) echoed in: \(message)")
                }
            }
            XCTAssertFalse(message.contains("hunter2"), message)
            XCTAssertFalse(message.contains("99999"), message)
        }
    }

    /// A byte-order mark is skipped; a NUL byte, a newline or ESC in a file name is escaped.
    func testByteOrderMarkAndEscapedNames() throws {
        let dir = TemporaryDirectory()
        let bom = dir.file("bom.yaml")
        try Data([0xEF, 0xBB, 0xBF] + Array("name: bom\nkind: upload-queue\n".utf8)).write(to: URL(fileURLWithPath: bom))
        XCTAssertEqual(try JobFile.load(contentsOf: URL(fileURLWithPath: bom)).name, "bom")
        let weird = dir.file("we\nird\u{1B}[2J.yaml")
        try Data("name: x\nkind: upload-queue\n\0\n".utf8).write(to: URL(fileURLWithPath: weird))
        XCTAssertThrowsError(try JobFile.load(contentsOf: URL(fileURLWithPath: weird))) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("we\\nird\\e[2J.yaml:3:1: job file holds a NUL byte"), text)
            XCTAssertFalse(text.contains("\u{1B}"), text)
        }
    }
}
