import CloudProtocol
import Foundation
import Postbox
import TestSupport
import XCTest

/// `jobrun run` of a `revalidate-references` job as an operator runs it: a real `cloudd`, the
/// built `jobrun`, a data root synced by `sync-history`; then every reference expired on the
/// server. Checks the refreshed Postbox, the counters and metrics, two processes at once (one
/// call per parent in total), and a failing cloud (exit 69, then recovery).
final class RevalidateReferencesIntegrationTests: XCTestCase {
    /// A cloudd child, a root with a `sync` job and `reval-a` / `reval-b` revalidation jobs, synced.
    func startSynced(seed: Int, window: String = "2h", config extra: String = "") throws -> (ClouddProcess, JobrunHarness) {
        let cloud = try startCloudd(["--seed", "\(seed)", "--dcs", "2", "--peers", "5", "--messages-per-peer", "12", "--cdn-fraction", "0"])
        let h = JobrunHarness()
        for name in ["reval-a", "reval-b"] {
            try h.writeJob(
                name,
                """
                name: \(name)
                kind: revalidate-references
                schedule: "@hourly"
                timeout: 2m
                retry:
                  backoffLimit: 0
                params:
                  window: \(window)
                  batchSize: 100
                  requestRate: 500
                  concurrency: 4
                  maxParents: 100000
                  requestTimeout: 10s
                """)
        }
        try h.configureAccount(for: cloud, extra: extra)
        try h.syncOnce(initialMessages: 12)
        return (cloud, h)
    }

    /// resource id → obtainedAt of every stored reference.
    func obtained(_ h: JobrunHarness) throws -> [String: Int64] {
        try h.accountPostbox().readSync { tx in
            var out: [String: Int64] = [:]
            try tx.mediaReferences.obtained(before: .max) {
                out[$0.resourceId] = $0.obtainedAt; return true
            }
            return out
        }
    }

    func testRevalidateJobRefreshesExpiredReferences() throws {
        // References live 3 s; the job refreshes those expiring within 1 s.
        let (cloud, h) = try startSynced(seed: 11, window: "1s", config: "referenceTTL: 3s\n")
        let before = try obtained(h)
        XCTAssertGreaterThan(before.count, 0)
        Thread.sleep(forTimeInterval: 3.2)  // the synced references are now within the window
        try cloud.expireReferences()
        try cloud.resetCounters()

        let run = try h.run(["run", "reval-a", "-v"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("parents_refreshed:"), run.stdout)
        XCTAssertTrue(run.stdout.contains("refreshed_message:"), run.stdout)
        let after = try obtained(h)
        XCTAssertEqual(Set(after.keys), Set(before.keys))
        for (id, at) in before { XCTAssertGreaterThan(after[id] ?? 0, at, "\(id) refreshed") }
        let counters = try cloud.counters()
        XCTAssertFalse(counters.parents.isEmpty)
        XCTAssertTrue(counters.parents.values.allSatisfy { $0 == 1 }, "\(counters.parents)")
        let peers = Set(counters.parents.keys.filter { $0.hasPrefix("message:") }.map { $0.split(separator: ":")[1] })
        XCTAssertEqual(counters.methods["messages.getMessages"], peers.count, "one call per peer with messages: \(counters.methods)")
        XCTAssertNotNil(counters.methods["photos.getPeerPhoto"])

        let finished = h.logEvents().filter { $0["event"] as? String == "run.finished" && $0["job"] as? String == "reval-a" }.last
        XCTAssertEqual((finished?["exit_code"] as? NSNumber)?.intValue, 0)
        XCTAssertEqual((finished?["parents_refreshed"] as? NSNumber)?.intValue, counters.parents.count)
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_reval-a.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_revalidation_parents{"), metrics)
        XCTAssertTrue(
            metrics.contains("jobrun_revalidate_references_parents_refreshed{jobrun_job=\"reval-a\",kind=\"revalidate-references\"} \(counters.parents.count)"),
            metrics)

        // Nothing expiring any more: the next run sends nothing.
        try cloud.resetCounters()
        let idle = try h.run(["run", "reval-a"])
        XCTAssertEqual(idle.status, 0, idle.stderr)
        XCTAssertEqual(try cloud.counters().parents, [:])
    }

    func testTwoProcessesRevalidateEachParentOnce() throws {
        // References live 3 s and the window is 1 s: after 3.2 s every synced one is due.
        let (cloud, h) = try startSynced(seed: 12, window: "1s", config: "referenceTTL: 3s\n")
        Thread.sleep(forTimeInterval: 3.2)
        try cloud.expireReferences()
        try cloud.setFaults(FaultConfig(latencyMs: 100))
        try cloud.resetCounters()
        let a = try h.start(["run", "reval-a"])
        let b = try h.start(["run", "reval-b"])
        let (sa, sb) = (a.wait(timeout: 120), b.wait(timeout: 120))
        XCTAssertEqual(sa, 0, a.stderr)
        XCTAssertEqual(sb, 0, b.stderr)
        let counters = try cloud.counters()
        XCTAssertFalse(counters.parents.isEmpty)
        XCTAssertTrue(counters.parents.values.allSatisfy { $0 == 1 }, "each parent once over both processes: \(counters.parents.filter { $0.value > 1 })")
    }

    /// A window that covers the references' whole lifetime (2h against 4 s) used to make every
    /// reference due, fresh or not: a run started a moment after another asked again for the
    /// parents the first had just refreshed. Clamped, and with outcomes reused by the run's own
    /// rule, two runs ask each parent at most once in total.
    func testTwoRunsAMomentApartWithAWindowCoveringTheLifetimeAskEachParentOnce() throws {
        let (cloud, h) = try startSynced(seed: 14, window: "2h", config: "referenceTTL: 4s\n")
        Thread.sleep(forTimeInterval: 4.2)
        try cloud.expireReferences()
        try cloud.setFaults(FaultConfig(latencyMs: 30))
        try cloud.resetCounters()
        let a = try h.start(["run", "reval-a"])
        Thread.sleep(forTimeInterval: 0.6)
        let b = try h.start(["run", "reval-b"])
        let (sa, sb) = (a.wait(timeout: 120), b.wait(timeout: 120))
        XCTAssertEqual(sa, 0, a.stderr)
        XCTAssertEqual(sb, 0, b.stderr)
        let counters = try cloud.counters()
        XCTAssertGreaterThan(counters.parents.count, 10)
        XCTAssertEqual(counters.parents.filter { $0.value > 1 }, [:], "each parent once over both runs")
    }

    func testFailingCloudExits69ThenRecovers() throws {
        let (cloud, h) = try startSynced(seed: 13, window: "1s", config: "referenceTTL: 3s\n")
        Thread.sleep(forTimeInterval: 3.2)  // every synced reference is now due
        try cloud.expireReferences()
        try cloud.setFaults(FaultConfig(failRevalidation: true))
        let failed = try h.run(["run", "reval-a"])
        XCTAssertEqual(failed.status, 69, failed.stderr)
        XCTAssertTrue(failed.stderr.contains("cloud unavailable"), failed.stderr)
        XCTAssertTrue(failed.stderr.contains("INTERNAL"), failed.stderr)

        try cloud.setFaults(FaultConfig(failRevalidation: false))
        Thread.sleep(forTimeInterval: 1.2)  // the failed parents' backoff (1 s after one failure)
        let recovered = try h.run(["run", "reval-a", "-v"])
        XCTAssertEqual(recovered.status, 0, recovered.stderr)
        XCTAssertTrue(recovered.stdout.contains("parents_failed: 0"), recovered.stdout)
    }
}
