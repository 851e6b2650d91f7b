import Foundation
import Postbox
import TestSupport
import XCTest

/// `history-retention`, `sync-history` and `prefetch-chat-media` under one `jobrun schedule`
/// process, on one Postbox: retention trims in small transactions while sync commits pages and
/// prefetch downloads, and nobody sees SQLITE_BUSY or loses a write.
final class HistoryRetentionScheduleTests: XCTestCase {
    func testRetentionRunsBesideSyncAndPrefetchWithoutBusyErrorsOrLostWrites() throws {
        let cloud = try startCloudd([
            "--seed", "62", "--dcs", "2", "--peers", "5", "--messages-per-peer", "300",
            "--max-media-size", "256K", "--cdn-fraction", "0", "--bandwidth", "1M",
        ])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 300)
        try FileManager.default.removeItem(atPath: h.jobsDir + "/sync.yaml")
        let peers = try cloud.dataset().peers.map(\.id)
        // New history for sync to page in (150 pages at 15 requests/s) while retention trims the old.
        var top: [Int64: Int32] = [:]
        for peer in peers { top[peer] = try cloud.addMessages(peerId: peer, count: 150).messages.map(\.id).max() }

        try h.writeJob(
            "sync",
            """
            name: sync
            kind: sync-history
            schedule: "* * * * *"
            timeout: 5m
            params:
              pageSize: 5
              concurrency: 2
              requestRate: 15
            """)
        try h.writeJob(
            "prefetch",
            """
            name: prefetch
            kind: prefetch-chat-media
            schedule: "* * * * *"
            timeout: 5m
            params:
              concurrency: 2
              budget: 6MiB
              freeSpaceFloor: 0
              lookback: 3650d
            """)
        try h.writeJob(
            "retention",
            """
            name: retention
            kind: history-retention
            schedule: "* * * * *"
            timeout: 5m
            params:
              maxMessagesPerPeer: 120
              keepNewest: 50
              batchSize: 10
              vacuumStep: 64KiB
            """)

        let scheduler = try h.start(["schedule", "--now"])
        let deadline = Date().addingTimeInterval(240)
        var finished: [[String: Any]] = []
        repeat {
            usleep(200_000)
            finished = h.logEvents().filter { $0["event"] as? String == "run.finished" && $0["process"] as? String == "scheduler" }
        } while Date() < deadline && !["sync", "prefetch", "retention"].allSatisfy { job in finished.contains { $0["job"] as? String == job } }
        scheduler.signal(SIGTERM)
        XCTAssertEqual(scheduler.wait(timeout: 120), 0, scheduler.stderr)

        // The scheduler's runs only (the first sync above ran under `jobrun run`).
        let events = h.logEvents().filter { $0["process"] as? String == "scheduler" }
        func first(_ job: String, _ event: String) -> [String: Any]? {
            events.first { $0["job"] as? String == job && $0["event"] as? String == event }
        }
        func int(_ e: [String: Any]?, _ key: String) -> Int64 { (e?[key] as? NSNumber)?.int64Value ?? -1 }
        for job in ["sync", "prefetch", "retention"] {
            let run = try XCTUnwrap(first(job, "run.finished"), "\(job) finished")
            XCTAssertEqual(run["outcome"] as? String, "succeeded", "\(job): \(run)")
        }
        let logs = h.allLogText().lowercased()
        XCTAssertFalse(logs.contains("busy") || logs.contains("database is locked"), "no writer saw SQLITE_BUSY")
        XCTAssertGreaterThan(int(first("retention", "run.finished"), "messages_removed"), 0, "retention had work")
        XCTAssertGreaterThan(int(first("sync", "run.finished"), "messages_stored"), 0, "sync had work")
        XCTAssertEqual(int(first("prefetch", "run.finished"), "failed"), 0)

        // Retention ran while sync was writing.
        let syncStart = try XCTUnwrap(first("sync", "run.started")?["ts"] as? String)
        let syncEnd = try XCTUnwrap(first("sync", "run.finished")?["ts"] as? String)
        let retentionStart = try XCTUnwrap(first("retention", "run.started")?["ts"] as? String)
        let retentionEnd = try XCTUnwrap(first("retention", "run.finished")?["ts"] as? String)
        XCTAssertTrue(
            retentionStart < syncEnd && syncStart < retentionEnd,
            "overlap: sync \(syncStart)…\(syncEnd), retention \(retentionStart)…\(retentionEnd)")

        // No lost write: the newest 120 messages of every peer (sync's new pages among them) are
        // stored, and the store is consistent.
        let postbox = try h.accountPostbox(readOnly: false)
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
        try postbox.readSync { tx in
            for peer in peers {
                let pid = PeerId(peer)
                var stored: [Int32] = []
                try tx.messages.scanIndexes(peer: pid) { index, _ in
                    stored.append(index.id.id); return true
                }
                let newest = try XCTUnwrap(top[peer])
                XCTAssertEqual(Set(stored.filter { $0 > newest - 120 }), Set((newest - 119)...newest), "peer \(peer): the newest 120 are all stored")
                // What went below them is recorded as trimmed, never silently missing.
                if let lowest = stored.min(), lowest > 1 {
                    XCTAssertEqual(try tx.holes.entries(peer: pid).last { $0.range.upperBound < lowest }?.kind, .trimmed, "peer \(peer)")
                }
            }
        }
    }
}
