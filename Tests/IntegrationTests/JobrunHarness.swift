import Foundation
import Postbox
import TestSupport
import XCTest

/// A data root and a jobs directory for running the built `jobrun` as a user would. The root is
/// of the kind the test process makes (`TestRoot`: plaintext, or encrypted with its key in
/// `<root>/keys/store.key`) unless a test names one.
final class JobrunHarness: @unchecked Sendable {
    let dir = TemporaryDirectory(prefix: "jobrun-it")
    var root: String { dir.file("root") }
    var jobsDir: String { dir.file("jobs") }
    let binary = Products.executable("jobrun")

    init(root kind: TestRoot.Kind = TestRoot.kind) {
        try? FileManager.default.createDirectory(atPath: jobsDir, withIntermediateDirectories: true)
        TestRoot.prepare(root, as: kind)
    }

    /// Another host of the fleet `first` belongs to: a root of its kind holding its key (see
    /// `TestRoot.prepare(_:sharingKeyOf:)`), so both hosts open the stores they share.
    init(sharingKeyOf first: JobrunHarness) {
        try? FileManager.default.createDirectory(atPath: jobsDir, withIntermediateDirectories: true)
        TestRoot.prepare(root, sharingKeyOf: first.root)
    }

    /// The key the root's stores are encrypted with, nil for a plaintext root: what a test
    /// opening one of them itself passes to `Postbox`.
    var storeKey: StoreKey? {
        get throws { try TestRoot.key(ofRoot: root) }
    }

    /// Writes `jobs/<name>.yaml`.
    func writeJob(_ name: String, _ yaml: String) throws {
        try yaml.write(toFile: jobsDir + "/\(name).yaml", atomically: true, encoding: .utf8)
    }

    /// A `time-based-cleanup` job over account 0 (no work on an empty cache).
    func writeCleanupJob(_ name: String, policy: String = "Forbid", schedule: String = "\"0 3 * * *\"") throws {
        try writeJob(
            name,
            """
            name: \(name)
            kind: time-based-cleanup
            schedule: \(schedule)
            timeout: 10m
            concurrencyPolicy: \(policy)
            params:
              maxSize: 1GiB
            """)
    }

    func arguments(_ args: [String]) -> [String] { args + ["--root", root, "--jobs-dir", jobsDir] }

    /// Starts `jobrun args…` in the background.
    func start(_ args: [String], failpoints: String? = nil) throws -> ChildProcess {
        var env: [String: String] = [:]
        if let failpoints { env["JOBRUN_FAILPOINTS"] = failpoints }
        return try ChildProcess(binary, arguments(args), environment: env)
    }

    /// Runs `jobrun args…` to completion.
    @discardableResult
    func run(_ args: [String], failpoints: String? = nil, timeout: TimeInterval = 300) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = try start(args, failpoints: failpoints)
        let status = p.wait(timeout: timeout)
        return (status, p.stdout, p.stderr)
    }

    /// Runs `jobrun args…` with a terminal for stdin, stdout and stderr, as a person at a shell
    /// would (util-linux `script` gives it a pseudo-terminal); returns the terminal's text, with
    /// stdout and stderr interleaved and line ends as `\n`.
    func runOnTerminal(_ args: [String], timeout: TimeInterval = 300) throws -> (status: Int32, output: String) {
        let quoted = ([binary] + arguments(args)).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let p = try ChildProcess("/usr/bin/script", ["-qec", quoted.joined(separator: " "), "/dev/null"], environment: [:])
        let status = p.wait(timeout: timeout)
        return (status, p.stdout.replacingOccurrences(of: "\r\n", with: "\n"))
    }

    /// Every log line of every process type, parsed (fails the test on a line that is not JSON).
    func logEvents(file: StaticString = #filePath, line: UInt = #line) -> [[String: Any]] {
        var events: [[String: Any]] = []
        let logs = root + "/logs"
        let enumerator = FileManager.default.enumerator(atPath: logs)
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".log") || path.range(of: #"\.log\.\d+$"#, options: .regularExpression) != nil else { continue }
            let text = (try? String(contentsOfFile: logs + "/" + path, encoding: .utf8)) ?? ""
            for l in text.split(separator: "\n") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any] else {
                    XCTFail("not a JSON line in \(path): \(l)", file: file, line: line)
                    continue
                }
                events.append(object)
            }
        }
        return events
    }

    /// The text of every file under the data root's logs directory.
    func allLogText() -> String {
        var text = ""
        let logs = root + "/logs"
        let enumerator = FileManager.default.enumerator(atPath: logs)
        while let path = enumerator?.nextObject() as? String {
            text += (try? String(contentsOfFile: logs + "/" + path, encoding: .utf8)) ?? ""
        }
        return text
    }
}

extension JobrunHarness {
    /// The cipher that seals the values the root's stores keep on a PostgreSQL server, nil for
    /// a plaintext root: what a test reading them itself passes to `PostgresValueBox`.
    var valueCipher: ValueCipher? {
        get throws { try storeKey.map { try ValueCipher(storeKey: $0) } }
    }

    /// Account 0's directory.
    var account: String { root + "/account-0" }

    /// Account 0's Postbox, opened with the root's key as jobrun opens it.
    func accountPostbox(readOnly: Bool = true) throws -> Postbox {
        try Postbox(path: account + "/postbox/db/db.sqlite", readOnly: readOnly, key: storeKey)
    }

    /// Writes account 0's `config.yaml` for `cloud`, plus `extra` lines.
    func configureAccount(for cloud: ClouddProcess, extra: String = "") throws {
        try FileManager.default.createDirectory(atPath: account, withIntermediateDirectories: true)
        try (cloud.accountConfig() + extra).write(toFile: account + "/config.yaml", atomically: true, encoding: .utf8)
    }

    /// Writes a `sync` job: every peer's `initialMessages` newest messages, no retries.
    func writeSyncJob(initialMessages: Int) throws {
        try writeJob(
            "sync",
            """
            name: sync
            kind: sync-history
            timeout: 2m
            retry:
              backoffLimit: 0
            params:
              initialMessages: \(initialMessages)
              requestRate: 500
            """)
    }

    /// Writes the `sync` job (`writeSyncJob`) and runs it once; the test fails unless it exits 0.
    func syncOnce(initialMessages: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        try writeSyncJob(initialMessages: initialMessages)
        let sync = try run(["run", "sync"])
        XCTAssertEqual(sync.status, 0, sync.stderr, file: file, line: line)
    }
}

extension XCTestCase {
    /// A `cloudd` child process with `arguments`, stopped when the test ends.
    func startCloudd(_ arguments: [String]) throws -> ClouddProcess {
        let cloud = try ClouddProcess(arguments)
        addTeardownBlock { cloud.stop() }
        return cloud
    }
}
