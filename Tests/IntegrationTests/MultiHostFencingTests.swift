import Foundation
import Postbox
import TestSupport
import XCTest

/// Self-fencing across hosts in network namespaces sharing one PostgreSQL and one `cloudd`: a
/// scheduler cut off from PostgreSQL in the middle of a paced prefetch stops its run before its
/// lease can run out, so after another host has taken the work item over, the cut host sends
/// and receives nothing and writes nothing into its cache — not while it is cut, and not once
/// its link is back. The takeover finds the cut host's run lock free: the new holder's run is
/// not refused.
final class MultiHostFencingTests: XCTestCase {
    func testACutOffHolderStopsBeforeItsWorkIsTakenOverAndTheTakeoverRuns() throws {
        let cluster = try startCluster(
            hosts: 2, clouddArguments: ["--seed", "21", "--dcs", "2", "--peers", "5", "--messages-per-peer", "30", "--cdn-fraction", "0"])
        guard cluster.network.isolated else {
            throw XCTSkip("cutting a host off needs network namespaces: \(cluster.network.fallbackReason ?? "")")
        }
        let (first, second) = (cluster.hosts[0], cluster.hosts[1])
        try first.harness.writeSyncJob(initialMessages: 30)
        let sync = try cluster.run(first, ["run", "sync"])
        XCTAssertEqual(sync.status, 0, sync.stderr)
        for h in cluster.hosts {
            // Paced far below the link: the run lasts minutes, and its parts take longer than
            // the request timeout while bytes keep coming.
            try h.writeJob(
                "prefetch",
                """
                name: prefetch
                kind: prefetch-chat-media
                schedule: "* * * * *"
                timeout: 30m
                concurrencyPolicy: Forbid
                accounts: [0]
                retry:
                  backoffLimit: 0
                params:
                  freeSpaceFloor: 0
                  budget: 1GiB
                  concurrency: 2
                  bandwidthLimit: 32KiB
                """)
        }
        let schedulers = try cluster.hosts.map { try cluster.start($0, ["schedule"]) }
        func holderPid() -> Int32? {
            let text = try? cluster.postgres.psql(
                "SELECT holder_pid FROM jobrun_cluster.work_items WHERE job = 'prefetch' AND state = 'running' ORDER BY fire_ms LIMIT 1",
                database: cluster.database)
            return text.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }

        // The next minute's fire: one host claims the account's item and starts downloading.
        XCTAssertTrue(waitUntil(100) { holderPid() != nil }, "a host claimed the fire: \(schedulers.map(\.stderr))")
        let holderIndex = try XCTUnwrap(schedulers.firstIndex { $0.pid == holderPid() }, "the holder is one of the schedulers")
        let (cut, survivor) = holderIndex == 0 ? (first, second) : (second, first)
        let (cutScheduler, survivorScheduler) = (schedulers[holderIndex], schedulers[1 - holderIndex])
        XCTAssertTrue(
            waitUntil(90) { cacheBytes(cut) >= 64 << 10 }, "the holder is downloading: \(cacheBytes(cut)) bytes, \(cutScheduler.stderr)")

        // Cut off: no reset, no FIN. Its lease runs out; the other host takes the item over.
        let cutAt = Date()
        try cluster.network.cut(cut.host)
        XCTAssertTrue(waitUntil(150) { holderPid() == survivorScheduler.pid }, "the item was taken over: \(survivorScheduler.stderr)")
        let takeover = Date().timeIntervalSince(cutAt)
        let fenced = events(cut, "scheduler.fenced")
        XCTAssertFalse(fenced.isEmpty, "the cut host stopped its run before the takeover: \(cutScheduler.stderr)")
        XCTAssertFalse(events(survivor, "scheduler.took_over").isEmpty, survivorScheduler.stderr)

        // From the takeover on, the cut host's cache and link stay as they are.
        let cacheAtTakeover = cache(cut)
        let linkAtTakeover = try linkBytes(cut)
        Thread.sleep(forTimeInterval: 12)
        XCTAssertEqual(cache(cut), cacheAtTakeover, "no file written in the cut host's cache after the takeover")
        XCTAssertEqual(try linkBytes(cut), linkAtTakeover, "no byte on the cut host's link after the takeover")

        // The new holder's run took the run lock: the cut host's session was gone by then.
        XCTAssertTrue(
            waitUntil(60) { cluster.runs(job: "prefetch", account: 0).contains { $0.pid == survivorScheduler.pid && $0.outcome != .skipped } },
            "the taken-over run started: \(survivorScheduler.stderr)")
        let refused = cluster.runs(job: "prefetch", account: 0).filter { $0.pid == survivorScheduler.pid && $0.outcome == .skipped }
        XCTAssertEqual(refused.map(\.runId), [], "no run refused by the cut host's lock: \(survivorScheduler.stderr)")
        XCTAssertFalse(survivorScheduler.stderr.contains("already running"), survivorScheduler.stderr)

        // The link comes back: the fenced run stays stopped, nothing more reaches the cache.
        try cluster.network.heal(cut.host)
        Thread.sleep(forTimeInterval: 15)
        XCTAssertEqual(cache(cut), cacheAtTakeover, "no file written in the cut host's cache once its link is back")
        print(
            "MultiHostFencingTests: taken over \(String(format: "%.1f", takeover)) s after the cut; the cut host fenced itself: \(fenced.compactMap { $0["reason"] as? String }); its cache kept \(cacheAtTakeover.values.reduce(0, +)) bytes"
        )
        for s in schedulers { s.signal(SIGTERM) }
        for s in schedulers { s.wait(timeout: 60) }
    }

    // MARK: Helpers

    /// Every regular file of the host's account 0 with its size (the cache and the staging).
    private func cache(_ h: ClusterHost) -> [String: Int64] {
        let base = h.root + "/account-0"
        var out: [String: Int64] = [:]
        let enumerator = FileManager.default.enumerator(atPath: base)
        while let path = enumerator?.nextObject() as? String {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: base + "/" + path),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            out[path] = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        }
        return out
    }

    private func cacheBytes(_ h: ClusterHost) -> Int64 { cache(h).values.reduce(0, +) }

    /// The bytes the host's own end of its link has sent and received.
    private func linkBytes(_ h: ClusterHost) throws -> String {
        let namespace = try XCTUnwrap(h.host.namespace)
        let read = try ChildProcess.run(
            "/usr/bin/env",
            ["ip", "netns", "exec", namespace, "cat", "/sys/class/net/eth0/statistics/tx_bytes", "/sys/class/net/eth0/statistics/rx_bytes"],
            timeout: 30)
        XCTAssertEqual(read.status, 0, read.stderr)
        return read.stdout.split(separator: "\n").joined(separator: " ")
    }

    private func events(_ h: ClusterHost, _ event: String) -> [[String: Any]] {
        h.harness.logEvents().filter { $0["event"] as? String == event }
    }
}
