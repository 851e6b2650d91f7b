import CloudProtocol
import Foundation
import Postbox
import TestSupport
import XCTest

/// `jobrun run sync-history` as an operator runs it: a real `cloudd` process on loopback, the
/// built `jobrun`, a data root on disk. Checks the Postbox, the exit codes, the log and the
/// metrics file, then that an unreachable cloud is exit 69 with a clear message.
final class SyncHistoryIntegrationTests: XCTestCase {
    /// A cloudd child (5 peers × 12 messages) and a root with a `sync` job paging 4 at a time.
    func startSync(seed: Int, concurrency: Int) throws -> (ClouddProcess, JobrunHarness) {
        let cloud = try ClouddProcess(["--seed", "\(seed)", "--dcs", "2", "--peers", "5", "--messages-per-peer", "12", "--cdn-fraction", "0"])
        addTeardownBlock { cloud.stop() }
        let h = JobrunHarness()
        try h.writeJob(
            "sync",
            """
            name: sync
            kind: sync-history
            schedule: "@hourly"
            timeout: 2m
            retry:
              backoffLimit: 0
            params:
              initialMessages: 10
              pageSize: 4
              concurrency: \(concurrency)
              requestRate: 200
            """)
        return (cloud, h)
    }

    func testSyncHistoryJobEndToEnd() throws {
        let (cloud, h) = try startSync(seed: 5, concurrency: 2)

        // No config.yaml yet: exit 78 naming the file.
        let missing = try h.run(["run", "sync"])
        XCTAssertEqual(missing.status, 78, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("account-0/config.yaml"), missing.stderr)

        let account = h.root + "/account-0"
        XCTAssertFalse(FileManager.default.fileExists(atPath: account), "a refused run creates nothing")
        try FileManager.default.createDirectory(atPath: account, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // A typo in it: exit 78 naming file, line and column, and the keys it knows.
        try "datacenter:\n  1: http://127.0.0.1:1\n".write(toFile: account + "/config.yaml", atomically: true, encoding: .utf8)
        let typo = try h.run(["run", "sync"])
        XCTAssertEqual(typo.status, 78, typo.stderr)
        XCTAssertTrue(typo.stderr.contains("config.yaml:1:1: unknown key 'datacenter'; did you mean 'datacenters'?"), typo.stderr)
        let token = "it-token-\(UUID().uuidString.prefix(8))"
        try "\(token)\n".write(toFile: account + "/credentials", atomically: true, encoding: .utf8)
        chmod(account + "/credentials", 0o600)  // a credentials file others may read is refused
        try cloud.accountConfig(credentialsFile: "credentials").write(toFile: account + "/config.yaml", atomically: true, encoding: .utf8)

        // First run: 10 newest messages of every peer.
        let first = try h.run(["run", "sync", "-v"])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdout.contains("messages_stored: 50"), first.stdout)
        let peers = try cloud.dataset().peers.map(\.id)
        do {
            let postbox = try h.accountPostbox()
            let (storedPeers, counts, states, references) = try postbox.readSync { tx in
                (
                    try tx.peers.count(), try peers.map { try tx.messages.count(peer: PeerId($0)) },
                    try peers.map { try tx.syncStates.get(PeerId($0))?.maxSyncedId }, try tx.mediaReferences.count()
                )
            }
            XCTAssertEqual(storedPeers, 5)
            XCTAssertEqual(counts, Array(repeating: 10, count: 5))
            XCTAssertEqual(states, Array(repeating: 12, count: 5))
            XCTAssertGreaterThan(references, 0)
        }
        let finished = h.logEvents().filter { $0["event"] as? String == "run.finished" && $0["job"] as? String == "sync" }
        XCTAssertEqual((finished.last?["messages_stored"] as? NSNumber)?.intValue, 50)
        XCTAssertEqual((finished.last?["exit_code"] as? NSNumber)?.intValue, 0)
        XCTAssertEqual(h.logEvents().filter { $0["event"] as? String == "sync.peer" }.count, 5)
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_sync.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_sync_history_messages_stored{jobrun_job=\"sync\",kind=\"sync-history\"} 50"), metrics)
        XCTAssertTrue(metrics.contains("jobrun_last_run_outcome{jobrun_job=\"sync\",kind=\"sync-history\",outcome=\"succeeded\"} 1"), metrics)

        // New messages on one peer: the second run asks for that history only.
        try cloud.resetCounters()
        XCTAssertEqual(try cloud.addMessages(peerId: peers[1], count: 3).messages.count, 3)
        let second = try h.run(["run", "sync", "-v"])
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertTrue(second.stdout.contains("messages_stored: 3"), second.stdout)
        let counters = try cloud.counters()
        XCTAssertEqual(counters.methods["messages.getHistory"], 1, "only the peer with new messages: \(counters.methods)")
        XCTAssertEqual(counters.methods["messages.getDialogs"], 1)
        do {
            let postbox = try h.accountPostbox()
            let count = try postbox.readSync { try $0.messages.count(peer: PeerId(peers[1])) }
            XCTAssertEqual(count, 13)
        }

        // The secret never reaches a log.
        XCTAssertFalse(h.allLogText().contains(token))

        // The cloud goes away: exit 69 and a message that says so.
        cloud.stop()
        let down = try h.run(["run", "sync"])
        XCTAssertEqual(down.status, 69, down.stderr)
        XCTAssertTrue(down.stderr.contains("cloud unavailable"), down.stderr)
        XCTAssertTrue(down.stderr.contains("messages.getDialogs"), down.stderr)
        let failed = h.logEvents().filter { $0["event"] as? String == "run.finished" && $0["job"] as? String == "sync" }.last
        XCTAssertEqual((failed?["exit_code"] as? NSNumber)?.intValue, 69)
    }
}

extension SyncHistoryIntegrationTests {
    /// A sync killed (SIGKILL) right after its first committed page resumes on the next run and
    /// fetches only the pages it had not committed.
    func testKilledSyncResumesWhereItStopped() throws {
        let (cloud, h) = try startSync(seed: 6, concurrency: 1)
        let account = h.root + "/account-0"
        try FileManager.default.createDirectory(atPath: account, withIntermediateDirectories: true)
        try cloud.accountConfig().write(toFile: account + "/config.yaml", atomically: true, encoding: .utf8)

        let killed = try h.run(["run", "sync"], failpoints: "sync-after-page=kill")
        XCTAssertNotEqual(killed.status, 0, "the run was killed: \(killed.stderr)")
        let peers = try cloud.dataset().peers.map(\.id)
        let (stored, holes) = try h.accountPostbox().readSync { tx in
            (
                try peers.map { try tx.messages.count(peer: PeerId($0)) }.reduce(0, +),
                try peers.flatMap { try tx.holes.holes(peer: PeerId($0)) }
            )
        }
        XCTAssertEqual(stored, 4, "exactly one page was committed before the crash")
        XCTAssertEqual(holes, [3...8], "the rest of that peer's first window is a hole")

        try cloud.resetCounters()
        let resumed = try h.run(["run", "sync", "-v"])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        let counts = try h.accountPostbox().readSync { tx in
            (try peers.map { try tx.messages.count(peer: PeerId($0)) }, try peers.flatMap { try tx.holes.holes(peer: PeerId($0)) })
        }
        XCTAssertEqual(counts.0, Array(repeating: 10, count: 5))
        XCTAssertEqual(counts.1, [])
        // 4 fresh peers × 3 pages + the killed peer's hole in 2 pages; its first page is not fetched again.
        XCTAssertEqual(try cloud.counters().methods["messages.getHistory"], 14)
        XCTAssertTrue(resumed.stdout.contains("holes_filled: 1"), resumed.stdout)
    }
}
