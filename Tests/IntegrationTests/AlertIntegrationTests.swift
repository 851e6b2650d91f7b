import Foundation
import TestSupport
import XCTest

/// Failure hooks and heartbeats with the built `jobrun` and a real HTTP listener on loopback.
final class AlertIntegrationTests: XCTestCase {
    /// Answers every request 200 and records its path.
    final class PingRecorder: @unchecked Sendable {
        private let lock = NSLock()
        private var recorded: [String] = []
        private(set) var listener: LoopbackListener!

        init() throws {
            listener = try LoopbackListener { [unowned self] fd in
                var data = [UInt8]()
                var byte: UInt8 = 0
                while read(fd, &byte, 1) == 1 {
                    data.append(byte)
                    if data.suffix(4) == Array("\r\n\r\n".utf8) { break }
                }
                let line = String(decoding: data, as: UTF8.self).split(separator: "\r\n").first ?? ""
                let parts = line.split(separator: " ")
                if parts.count >= 2 {
                    self.lock.lock()
                    self.recorded.append(String(parts[1]))
                    self.lock.unlock()
                }
                let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK"
                _ = answer.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            }
        }

        var paths: [String] {
            lock.lock()
            defer { lock.unlock() }
            return recorded
        }
    }

    /// A sync job whose cloud is a closed port: it fails with 69 at once.
    private func writeFailingJob(_ h: JobrunHarness, name: String, extra: String) throws {
        try FileManager.default.createDirectory(atPath: h.account, withIntermediateDirectories: true)
        try "datacenters:\n  1: http://127.0.0.1:9\ncdn: http://127.0.0.1:9\nmainDc: 1\n".write(
            toFile: h.account + "/config.yaml", atomically: true, encoding: .utf8)
        try h.writeJob(name, "name: \(name)\nkind: sync-history\ntimeout: 60s\nretry:\n  backoffLimit: 0\n" + extra)
    }

    func testHeartbeatPingsStartSuccessAndFailAndTheHookAlertsOncePerStreak() throws {
        let pings = try PingRecorder()
        let h = JobrunHarness()
        let secret = "9d4c1f7e-secret-uuid"
        try h.writeJob(
            "tidy",
            """
            name: tidy
            kind: time-based-cleanup
            heartbeat: \(pings.listener.baseURL)/ping/\(secret)
            params:
              maxSize: 1GiB
            """)
        let ok = try h.run(["run", "tidy", "--scheduled"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(pings.paths, ["/ping/\(secret)/start", "/ping/\(secret)"])

        let hookOut = h.dir.file("hook.txt")
        try writeFailingJob(
            h, name: "sync",
            extra: "heartbeat: \(pings.listener.baseURL)/ping/sync-\(secret)\nonFailure: env | grep '^JOBRUN_' | sort >> \(hookOut); echo --- >> \(hookOut)\n")
        let first = try h.run(["run", "sync", "--scheduled"])
        XCTAssertEqual(first.status, 69, first.stderr)
        XCTAssertEqual(Array(pings.paths.suffix(2)), ["/ping/sync-\(secret)/start", "/ping/sync-\(secret)/fail"])
        let hook = try String(contentsOfFile: hookOut, encoding: .utf8)
        for line in ["JOBRUN_JOB=sync", "JOBRUN_KIND=sync-history", "JOBRUN_OUTCOME=failed", "JOBRUN_EXIT_CODE=69", "JOBRUN_FAILURES=1"] {
            XCTAssertTrue(hook.contains(line + "\n"), "the hook's environment has \(line):\n\(hook)")
        }
        XCTAssertTrue(hook.contains("JOBRUN_RUN_ID=") && hook.contains("JOBRUN_MESSAGE="), hook)

        let second = try h.run(["run", "sync", "--scheduled"])
        XCTAssertEqual(second.status, 69)
        XCTAssertEqual(pings.paths.last, "/ping/sync-\(secret)/fail", "every failure is still reported to the heartbeat")
        XCTAssertEqual(
            try String(contentsOfFile: hookOut, encoding: .utf8).components(separatedBy: "---").count - 1, 1,
            "the second consecutive failure does not alert again")
        XCTAssertTrue(h.logEvents().contains { $0["event"] as? String == "alert.suppressed" })

        // systemd's OnFailure= for the same streak: the heartbeat hears it, the hook stays quiet.
        let notify = try h.run(["notify-failure", "sync"])
        XCTAssertEqual(notify.status, 0, notify.stderr)
        XCTAssertEqual(try String(contentsOfFile: hookOut, encoding: .utf8).components(separatedBy: "---").count - 1, 1)

        XCTAssertFalse(h.allLogText().contains(secret), "the heartbeat URL's secret is never logged")
    }

    func testDefaultsFromTheEnvironmentAndAUnitFailureJobrunDidNotSee() throws {
        let pings = try PingRecorder()
        let h = JobrunHarness()
        try h.writeCleanupJob("tidy")
        XCTAssertEqual(try h.run(["run", "tidy"]).status, 0)  // the root exists
        let hookOut = h.dir.file("hook.txt")
        let environment = [
            "JOBRUN_HEARTBEAT": pings.listener.baseURL + "/key/{job}",
            "JOBRUN_ON_FAILURE": "echo \"$JOBRUN_JOB $JOBRUN_OUTCOME\" >> \(hookOut)",
        ]
        let run = try ChildProcess(h.binary, h.arguments(["run", "tidy"]), environment: environment)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        XCTAssertEqual(pings.paths, ["/key/tidy/start", "/key/tidy"], "the default heartbeat, with the job's name in it")

        let notify = try ChildProcess(h.binary, h.arguments(["notify-failure", "tidy"]), environment: environment)
        XCTAssertEqual(notify.wait(), 0, notify.stderr)
        XCTAssertEqual(try String(contentsOfFile: hookOut, encoding: .utf8), "tidy unit_failed\n")
        XCTAssertEqual(pings.paths.last, "/key/tidy/fail")
    }

    func testAHeartbeatEndpointThatIsDownOrHangsNeitherFailsNorStallsTheJob() throws {
        let h = JobrunHarness()
        let closed = try FreePort.pick()
        try h.writeJob("down", "name: down\nkind: time-based-cleanup\nheartbeat: http://127.0.0.1:\(closed)/ping/x\nparams:\n  maxSize: 1GiB\n")
        let started = Date()
        let down = try h.run(["run", "down", "--scheduled"])
        XCTAssertEqual(down.status, 0, "a ping that cannot be sent never fails the run: \(down.stderr)")
        XCTAssertEqual(down.stdout + down.stderr, "", "nor makes the scheduled run noisy")
        XCTAssertLessThan(Date().timeIntervalSince(started), 15)

        let silent = try LoopbackListener { fd in LoopbackListener.waitForClose(fd) }
        defer { silent.stop() }
        try h.writeJob(
            "hang", "name: hang\nkind: time-based-cleanup\nheartbeat: \(silent.baseURL)/ping/y\nheartbeatTimeout: 1s\nparams:\n  maxSize: 1GiB\n")
        let begin = Date()
        let hang = try h.run(["run", "hang", "--scheduled"])
        let elapsed = Date().timeIntervalSince(begin)
        XCTAssertEqual(hang.status, 0, hang.stderr)
        XCTAssertLessThan(elapsed, 20, "two pings of 3 attempts × 1 s each plus backoff, not a stall")
        let failures = h.logEvents().filter { $0["event"] as? String == "heartbeat.failed" }
        XCTAssertEqual(Set(failures.compactMap { $0["job"] as? String }), ["down", "hang"])
        XCTAssertTrue(failures.allSatisfy { ($0["endpoint"] as? String)?.hasSuffix("/…") == true }, "\(failures)")
        XCTAssertFalse(h.allLogText().contains("/ping/y"), "only the redacted endpoint is logged")
    }

    func testABadHeartbeatURLIsAPositionedError() throws {
        let h = JobrunHarness()
        try h.writeJob("bad", "name: bad\nkind: upload-queue\nheartbeat: ftp://example.com/x\n")
        let result = try h.run(["validate"])
        XCTAssertEqual(result.status, 78)
        XCTAssertTrue(result.stderr.contains("bad.yaml:3:12") && result.stderr.contains("heartbeat"), result.stderr)
    }
}
