import Foundation
import TestSupport
import XCTest

/// Metrics where batch jobs keep them, with Debian's real tools on loopback: a run pushes its
/// metrics to `prometheus-pushgateway`, `jobrun schedule --listen` serves `/metrics`, `/healthz`
/// and `/readyz`, `promtool check metrics` accepts both, and a real Prometheus scrapes both.
final class MetricsEndpointTests: XCTestCase {
    /// A secret that a job's configuration holds and that neither path may show.
    static let secret = "4f1e9a-heartbeat-secret"

    /// `curl -s` of `url`: the HTTP status and the body.
    static func get(_ url: String) throws -> (status: Int, body: String) {
        let curl = try ChildProcess.run("/usr/bin/curl", ["-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20", url])
        var lines = curl.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.popLast() ?? "") ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// Waits until `url` answers 200; its body.
    static func waitFor(_ url: String, seconds: TimeInterval = 60) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let answer = try? get(url), answer.status == 200 { return answer.body }
            usleep(200_000)
        }
        XCTFail("\(url) did not answer 200 within \(seconds) s")
        return ""
    }

    /// `promtool check metrics` of `text`: its findings (empty when clean) and exit status.
    static func promtoolCheck(_ text: String, in dir: TemporaryDirectory) throws -> (status: Int32, findings: String) {
        let promtool = try MetricsConventionTests.tool("promtool")
        let file = dir.file("check-\(UUID().uuidString).prom")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try ChildProcess.run("/bin/sh", ["-c", "exec \"$0\" check metrics < \"$1\"", promtool, file])
        return (check.status, check.stdout + check.stderr)
    }

    /// The lines of the `jobrun_*` families of a scrape (HELP, TYPE and samples).
    static func jobrunFamilies(_ scrape: String) -> String {
        scrape.split(separator: "\n").filter { line in
            line.hasPrefix("jobrun_") || ((line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ")) && line.split(separator: " ")[2].hasPrefix("jobrun_"))
        }.joined(separator: "\n") + "\n"
    }

    private func writeJobs(_ h: JobrunHarness, heartbeat: String) throws {
        for name in ["tidy", "sweep"] {
            try h.writeJob(
                name,
                """
                name: \(name)
                kind: time-based-cleanup
                schedule: "0 3 * * *"
                heartbeat: \(heartbeat)/\(Self.secret)
                params:
                  maxSize: 1GiB
                """)
        }
    }

    func testARunPushesItsMetricsToThePushgatewayGroupedByJobAndAccount() throws {
        let pushgateway = try MetricsConventionTests.tool("prometheus-pushgateway")
        let pings = try AlertIntegrationTests.PingRecorder()
        let h = JobrunHarness()
        try writeJobs(h, heartbeat: pings.listener.baseURL)
        let port = try FreePort.pick()
        let gateway = try ChildProcess(pushgateway, ["--web.listen-address=127.0.0.1:\(port)"])
        defer {
            gateway.signal(SIGTERM)
            gateway.wait()
        }
        _ = try Self.waitFor("http://127.0.0.1:\(port)/-/ready")

        let run = try h.run(["run", "tidy", "--pushgateway", "http://127.0.0.1:\(port)/"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let env = try ChildProcess(h.binary, h.arguments(["run", "sweep"]), environment: ["JOBRUN_PUSHGATEWAY": "http://127.0.0.1:\(port)"])
        XCTAssertEqual(env.wait(), 0, env.stderr)

        // A start that does not run (the job is paused) pushes its count too.
        XCTAssertEqual(try h.run(["pause", "sweep"]).status, 0)
        let paused = try h.run(["run", "sweep", "--scheduled", "--pushgateway", "http://127.0.0.1:\(port)"])
        XCTAssertEqual(paused.status, 0, paused.stderr)

        let scrape = try Self.waitFor("http://127.0.0.1:\(port)/metrics")
        let suspended = scrape.split(separator: "\n").first {
            $0.hasPrefix("jobrun_runs_total{") && $0.contains("jobrun_job=\"sweep\"") && $0.contains("outcome=\"suspended\"")
        }
        XCTAssertEqual(suspended.map { $0.hasSuffix(" 1") }, true, "the paused start is on the Pushgateway: \(suspended ?? "none")")
        for job in ["tidy", "sweep"] {
            let outcome = scrape.split(separator: "\n").first {
                $0.hasPrefix("jobrun_last_run_outcome{") && $0.contains("jobrun_job=\"\(job)\"") && $0.contains("outcome=\"succeeded\"")
            }
            let line = try XCTUnwrap(outcome, "\(job)'s group is on the Pushgateway:\n\(scrape.prefix(3000))")
            XCTAssertTrue(line.contains("account=\"0\"") && line.contains("job=\"jobrun\"") && line.hasSuffix(" 1"), String(line))
        }
        XCTAssertTrue(scrape.contains("push_time_seconds{account=\"0\",instance=\"\",job=\"jobrun\",jobrun_job=\"tidy\"}"), "one group per job and account")
        let check = try Self.promtoolCheck(Self.jobrunFamilies(scrape), in: h.dir)
        XCTAssertEqual(check.status, 0, check.findings)
        XCTAssertEqual(check.findings, "", "no lint finding")
        XCTAssertFalse(scrape.contains(Self.secret), "no secret reaches the Pushgateway")
        XCTAssertFalse(h.allLogText().contains(Self.secret))

        // A URL with credentials is refused without being repeated; an unreachable gateway never fails the run.
        let withPassword = try h.run(["run", "tidy", "--pushgateway", "http://user:pw-\(Self.secret)@127.0.0.1:\(port)"])
        XCTAssertEqual(withPassword.status, 64, withPassword.stderr)
        XCTAssertFalse(withPassword.stderr.contains(Self.secret), withPassword.stderr)
        let fromEnvironment = try ChildProcess(h.binary, h.arguments(["run", "tidy"]), environment: ["JOBRUN_PUSHGATEWAY": "ftp://x/\(Self.secret)"])
        XCTAssertEqual(fromEnvironment.wait(), 78, fromEnvironment.stderr)
        XCTAssertFalse(fromEnvironment.stderr.contains(Self.secret), fromEnvironment.stderr)
        let closed = try FreePort.pick()
        let down = try h.run(["run", "tidy", "--pushgateway", "http://127.0.0.1:\(closed)"])
        XCTAssertEqual(down.status, 0, down.stderr)
        XCTAssertTrue(h.logEvents().contains { $0["event"] as? String == "metrics.push_failed" })
    }

    func testTheSchedulerServesMetricsHealthAndReadinessThatPrometheusScrapes() throws {
        let prometheus = try MetricsConventionTests.tool("prometheus")
        let promtool = try MetricsConventionTests.tool("promtool")
        let pings = try AlertIntegrationTests.PingRecorder()
        let h = JobrunHarness()
        try writeJobs(h, heartbeat: pings.listener.baseURL)
        XCTAssertEqual(try h.run(["schedule", "--listen", "nonsense"]).status, 78)

        let port = try FreePort.pick()
        let scheduler = try h.start(["schedule", "--now", "--listen", "127.0.0.1:\(port)", "--log-file", "-", "--log-format", "json"])
        var stopped = false
        defer { if !stopped { scheduler.signal(SIGTERM); scheduler.wait() } }
        let base = "http://127.0.0.1:\(port)"
        XCTAssertEqual(try Self.waitFor(base + "/healthz").trimmingCharacters(in: .whitespacesAndNewlines), "ok")
        XCTAssertEqual(try Self.get(base + "/readyz").status, 200)
        XCTAssertEqual(try Self.get(base + "/nothing").status, 404)
        // Both jobs ran at start (--now): their series are served, each family once.
        let deadline = Date().addingTimeInterval(120)
        var metrics = ""
        while Date() < deadline {
            metrics = try Self.get(base + "/metrics").body
            if metrics.contains("jobrun_job=\"tidy\"") && metrics.contains("jobrun_job=\"sweep\"") { break }
            usleep(300_000)
        }
        XCTAssertTrue(metrics.contains("jobrun_last_run_outcome{jobrun_job=\"sweep\",kind=\"time-based-cleanup\",outcome=\"succeeded\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("jobrun_scheduler_ready 1"), metrics)
        XCTAssertEqual(metrics.components(separatedBy: "# TYPE jobrun_last_run_outcome ").count, 2, "one TYPE line per family")
        let check = try Self.promtoolCheck(metrics, in: h.dir)
        XCTAssertEqual(check.status, 0, check.findings)
        XCTAssertEqual(check.findings, "")
        XCTAssertFalse(metrics.contains(Self.secret), "no secret on /metrics")

        // A real Prometheus scrapes the endpoint.
        let promPort = try FreePort.pick()
        let config = h.dir.file("prometheus.yml")
        try """
        global:
          scrape_interval: 1s
        scrape_configs:
          - job_name: jobrun-scheduler
            static_configs:
              - targets: ["127.0.0.1:\(port)"]
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let server = try ChildProcess(
            prometheus,
            [
                "--config.file=\(config)", "--storage.tsdb.path=\(h.dir.file("tsdb"))", "--web.listen-address=127.0.0.1:\(promPort)",
            ])
        defer {
            server.signal(SIGTERM)
            server.wait()
        }
        let until = Date().addingTimeInterval(120)
        var answer = ""
        while Date() < until {
            let query = try ChildProcess.run(promtool, ["query", "instant", "http://127.0.0.1:\(promPort)", "jobrun_last_run_outcome{outcome=\"succeeded\"}"])
            answer = query.stdout
            if answer.contains("tidy") && answer.contains("sweep") { break }
            usleep(500_000)
        }
        XCTAssertTrue(answer.contains("jobrun_job=\"tidy\"") && answer.contains("job=\"jobrun-scheduler\""), "Prometheus scraped the scheduler: \(answer)")

        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(), 0, scheduler.stderr)
        stopped = true
        XCTAssertFalse(scheduler.stderr.contains(Self.secret))
    }
}
