import Foundation
import XCTest

@testable import Jobs

final class LoggingTests: XCTestCase {
    private func readLines(_ url: URL) throws -> [[String: Any]] {
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try XCTUnwrap(object as? [String: Any], "not an object: \(line)")
        }
    }

    func testLinesAreJSONWithStandardFieldsAndPermissions() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = DataRoot(url: directory)
        let sink = try LogSink(root: root, process: "jobrun", minimumLevel: .debug, console: .off)
        let log = JobLogger(sink: sink).with(job: "sync-history", run: "run-1").with(["account": 0])
        log.info("run.started", ["attempt": 1, "dry_run": false, "ratio": 0.5, "note": "quote \" and\nnewline", "peers": [1, 2]])
        log.debug("detail")
        JobLogger(sink: sink).warning("no.job")
        let file = root.logs(process: "jobrun").appendingPathComponent("jobrun.log")
        XCTAssertEqual(sink.fileURL, file)
        let lines = try readLines(file)
        XCTAssertEqual(lines.count, 3)
        let first = lines[0]
        XCTAssertEqual(first["level"] as? String, "info")
        XCTAssertEqual(first["process"] as? String, "jobrun")
        XCTAssertEqual(first["pid"] as? Int, Int(getpid()))
        XCTAssertEqual(first["job"] as? String, "sync-history")
        XCTAssertEqual(first["run"] as? String, "run-1")
        XCTAssertEqual(first["event"] as? String, "run.started")
        XCTAssertEqual(first["account"] as? Int, 0)
        XCTAssertEqual(first["note"] as? String, "quote \" and\nnewline")
        XCTAssertEqual(first["peers"] as? [Int], [1, 2])
        let ts = try XCTUnwrap(first["ts"] as? String)
        XCTAssertNotNil(ts.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression), ts)
        XCTAssertTrue(lines[2]["job"] is NSNull)
        // Key order: the standard fields first.
        let raw = try String(contentsOf: file, encoding: .utf8)
        XCTAssertTrue(raw.hasPrefix("{\"ts\":\""), raw)
        XCTAssertTrue(raw.contains("\"process\":\"jobrun\",\"pid\":\(getpid()),\"job\":\"sync-history\",\"run\":\"run-1\",\"event\":\"run.started\""))
        var info = stat()
        XCTAssertEqual(stat(file.path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(file.deletingLastPathComponent().path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
    }

    /// Every string comes back whole from the JSON it is written as; quotes, backslashes, control
    /// characters and the two JavaScript line separators are escaped, other text is written as is.
    func testStringsAreEscapedExactlyWhereJSONNeedsIt() throws {
        let cases = [
            "plain ascii", "", "quote \" and backslash \\", "line\nbreak\r\ttab", "bell \u{07} nul \u{00}",
            "separators \u{2028} \u{2029}", "euro € en dash – emoji 😀 accented é", "\u{7f} delete",
        ]
        for text in cases {
            let encoded = JSONLine.encode(.string(text))
            let decoded = try JSONSerialization.jsonObject(with: Data(encoded.utf8), options: .fragmentsAllowed) as? String
            XCTAssertEqual(decoded, text, encoded)
            XCTAssertFalse(encoded.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x2028 || $0.value == 0x2029 }, encoded)
        }
        XCTAssertEqual(JSONLine.encode(.string("a\u{2028}€")), "\"a\\u2028€\"")
        XCTAssertEqual(JSONLine.encode(.string("plain")), "\"plain\"")
    }

    func testTimestampFormat() {
        XCTAssertEqual(JSONLine.timestamp(Date(timeIntervalSince1970: 1_795_000_000.1234)), "2026-11-18T11:06:40.123Z")
        XCTAssertEqual(JSONLine.timestamp(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00.000Z")
    }

    func testRedactionNeverWritesSecrets() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = try LogSink(configuration: .init(directory: directory, process: "jobrun", console: .off))
        let log = JobLogger(sink: sink, job: "prefetch", run: "r")
        let hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
        let base64Token = "q8Zp3VfX0rT5bLwN2kJ9uYcE7aHsD4gM1oQ6iRvB+/xz"
        let reference = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA"
        log.info(
            "download.started",
            [
                "file_reference": "short-but-secret",
                "fileReference": .string(reference),
                "key": .string(hexKey),
                "iv": "0123",
                "aes_iv": "4567",
                "cdn_token": "tok",
                "authorization": "Bearer abc",
                "credentials": ["user": "u", "password": "p"],
                "password": "hunter2",
                "nested": ["inner": ["secret": "deep-secret-value"], "list": [.string("x \(base64Token) y")]],
                "message": .string("got reference \(reference) for message 5"),
                "url": .string("https://dc1.example/file?token=\(hexKey)"),
                "path": "/var/lib/jobrun/account-0/postbox/media/cache/photo_12345_abcdef",
                "run_id": "3F2504E0-4F89-41D3-9A0C-0305E82C3301",
                "bytes": 1024,
            ])
        log.info("event with \(hexKey)")
        let text = try String(contentsOf: sink.fileURL!, encoding: .utf8)
        for secret in ["short-but-secret", reference, hexKey, "0123", "4567", "tok\"", "Bearer abc", "hunter2", "deep-secret-value", base64Token] {
            XCTAssertFalse(text.contains(secret), "secret \(secret) leaked:\n\(text)")
        }
        // Non-secrets survive.
        XCTAssertTrue(text.contains("/var/lib/jobrun/account-0/postbox/media/cache/photo_12345_abcdef"))
        XCTAssertTrue(text.contains("3F2504E0-4F89-41D3-9A0C-0305E82C3301"))
        XCTAssertTrue(text.contains("\"bytes\":1024"))
        XCTAssertTrue(text.contains("got reference [redacted] for message 5"))
        XCTAssertTrue(text.contains("\"file_reference\":\"[redacted]\""))
        XCTAssertTrue(text.contains("\"credentials\":\"[redacted]\""))
    }

    func testSecretKeyRule() {
        for key in [
            "file_reference", "fileReference", "file_references", "reference", "key", "aesKey", "api-key", "iv", "aes_iv",
            "cdnIv", "token", "cdnToken", "access_token", "secret", "clientSecret", "password", "authorization",
            "credentials", "cookie", "signature",
        ] {
            XCTAssertTrue(LogRedaction.isSecretKey(key), key)
        }
        for key in ["bytes", "peer", "message_id", "referencesRefreshed", "keep", "tier", "event_count", "archive", "duration"] {
            XCTAssertFalse(LogRedaction.isSecretKey(key), key)
        }
    }

    func testRotationAndRetention() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = try LogSink(configuration: .init(directory: directory, process: "jobrun", maxFileSize: 2_000, maxFiles: 3, console: .off))
        let log = JobLogger(sink: sink, job: "j", run: "r")
        for index in 0..<200 { log.info("tick", ["index": .int(Int64(index)), "pad": .string(String(repeating: "x", count: 50))]) }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasSuffix(".lock") }.sorted()
        XCTAssertEqual(names, ["jobrun.log", "jobrun.log.1", "jobrun.log.2", "jobrun.log.3"])
        var indices: [Int] = []
        for name in names.reversed() where name != "jobrun.log" {
            let url = directory.appendingPathComponent(name)
            XCTAssertLessThanOrEqual(try Data(contentsOf: url).count, 2_000, name)
            indices += try readLines(url).compactMap { $0["index"] as? Int }
        }
        indices += try readLines(directory.appendingPathComponent("jobrun.log")).compactMap { $0["index"] as? Int }
        // The newest events survive, in order, ending with the last one written.
        XCTAssertEqual(indices.last, 199)
        XCTAssertEqual(indices, Array(indices.first!...199))

        // Age-based retention: rotated files older than maxAge are pruned at the next rotation.
        let old = directory.appendingPathComponent("jobrun.log.3")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -30 * 86_400)], ofItemAtPath: old.path)
        let aged = try LogSink(
            configuration: .init(
                directory: directory, process: "jobrun", maxFileSize: 2_000, maxFiles: 5,
                maxAge: .seconds(7 * 86_400), console: .off))
        for _ in 0..<15 { JobLogger(sink: aged).info("tock", ["pad": .string(String(repeating: "y", count: 50))]) }
        let after = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        XCTAssertTrue(after.contains("jobrun.log.1"))
        // The aged file was shifted by rotation, then deleted as too old: nothing old remains.
        for name in after where name.hasPrefix("jobrun.log.") && !name.hasSuffix(".lock") {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            let modified = try XCTUnwrap(attributes[.modificationDate] as? Date)
            XCTAssertGreaterThan(modified, Date(timeIntervalSinceNow: -86_400), name)
        }
    }

    func testConcurrentWritersProduceWholeLines() async throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = try LogSink(configuration: .init(directory: directory, process: "jobrun", maxFileSize: 50_000, maxFiles: 50, console: .off))
        let base = JobLogger(sink: sink)
        await withTaskGroup(of: Void.self) { group in
            for job in 0..<8 {
                let log = base.with(job: "job-\(job)", run: "run-\(job)")
                group.addTask {
                    for index in 0..<250 { log.info("step", ["index": .int(Int64(index))]) }
                }
            }
        }
        var count = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasPrefix("jobrun.log") && !name.hasSuffix(".lock") {
            count += try readLines(directory.appendingPathComponent(name)).count
        }
        XCTAssertEqual(count, 2000)
    }

    func testHumanLine() throws {
        let sink = try LogSink(configuration: .init(directory: nil, process: "jobrun", console: .off))
        let line = sink.humanLine(
            date: Date(timeIntervalSince1970: 0), level: .warning, job: "sync", run: "0123456789",
            event: "run.retry", fields: ["delay": 30, "reason": "flood wait"])
        XCTAssertEqual(line, "00:00:00.000 WARNING sync [01234567] run.retry delay=30 reason=\"flood wait\"\n")
    }

    /// `run.started` says its parameters as a job file writes them, with secret-named ones
    /// redacted, and a line for people then leaves the JSON params object out.
    func testRunStartedReadsLikeTheJobFile() throws {
        let job = try JobFile.parse(
            yaml: """
                name: trim
                kind: time-based-cleanup
                accounts: [3, 4]
                params:
                  maxSize: 2GiB
                  ttl: 7d
                """, file: "trim.yaml")
        let text = JobRunner.startedMessage(job, dryRun: true)
        XCTAssertTrue(text.hasPrefix("trim started (dry run), kind time-based-cleanup, accounts 3, 4: "), text)
        XCTAssertTrue(text.contains("maxSize=2GiB"), "sizes as written, not a byte count: \(text)")
        XCTAssertTrue(text.contains("ttl=7d"), text)
        XCTAssertFalse(text.contains("2147483648"), text)

        let fields: [String: LogValue] = ["msg": .string(text), "kind": "time-based-cleanup", "params": .object(["maxSize": .int(1)])]
        XCTAssertEqual(Set(LogSink.humanFields(fields).keys), ["kind"], "structured fields stay in the JSON log")
        XCTAssertEqual(Set(LogSink.humanFields(["params": .object([:]), "n": 1]).keys), ["params", "n"], "without a msg every field shows")
    }
}

final class ParamsLoggingTests: XCTestCase {
    /// A secret planted in job parameters never reaches the log, even when the params are logged.
    func testSecretInParamsIsRedacted() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        // Planted in free text of the job file, and in a field named like a secret.
        let job = try JobFile.parse(
            yaml: """
                name: s
                kind: upload-queue
                description: "token \(secret)"
                params:
                  concurrency: 2

                """, file: "s.yaml")
        let sink = try LogSink(configuration: .init(directory: directory, process: "jobrun", console: .off))
        JobLogger(sink: sink, job: job.name, run: "r").info(
            "run.params",
            [
                "params": .init(job.params), "description": .string(job.description ?? ""), "auth_token": .string(secret),
            ])
        let text = try String(contentsOf: sink.fileURL!, encoding: .utf8)
        XCTAssertFalse(text.contains(secret), text)
        XCTAssertTrue(text.contains("\"params\":{"), text)
        XCTAssertTrue(text.contains("\"concurrency\":2"), text)
    }
}
