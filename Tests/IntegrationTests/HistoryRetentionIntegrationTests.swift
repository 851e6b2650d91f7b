import Foundation
import Postbox
import TestSupport
import XCTest

/// `jobrun run history-retention` as an operator runs it, on history synced from a real
/// `cloudd`: the dry run lists and changes nothing, the run trims to the count, trimmed ranges
/// are holes a plain sync leaves alone and a sync asked to refill fetches again, and
/// `jobrun stats --database` reports the store.
final class HistoryRetentionIntegrationTests: XCTestCase {
    var dbPath: (JobrunHarness) -> String { { $0.account + "/postbox/db/db.sqlite" } }

    /// A retention job without a limit is refused by `validate` as it is by `run`: the rule is
    /// the kind's schema, which every command applies.
    func testValidateAndRunBothRefuseRetentionWithoutALimit() throws {
        let h = JobrunHarness()
        try h.writeJob("nolimit", "name: nolimit\nkind: history-retention\nparams:\n  keepNewest: 10\n")
        let validate = try h.run(["validate", h.jobsDir + "/nolimit.yaml"])
        XCTAssertEqual(validate.status, 78, validate.stdout + validate.stderr)
        XCTAssertTrue(
            validate.stderr.contains("nolimit.yaml:4:3: history-retention needs at least one of maxAge, maxMessagesPerPeer, maxSize"), validate.stderr)
        let run = try h.run(["run", "nolimit"])
        XCTAssertEqual(run.status, 78, run.stdout + run.stderr)
        XCTAssertTrue(run.stderr.contains("history-retention needs at least one of"), run.stderr)
        try h.writeJob("withlimit", "name: withlimit\nkind: history-retention\nparams:\n  maxSize: 1PB\n")
        let valid = try h.run(["validate", h.jobsDir + "/withlimit.yaml"])
        XCTAssertEqual(valid.status, 0, valid.stdout + valid.stderr)
    }

    func testRetentionTrimsToHolesThatSyncRefillsOnRequest() throws {
        let cloud = try startCloudd(["--seed", "61", "--dcs", "2", "--peers", "5", "--messages-per-peer", "60", "--cdn-fraction", "0"])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 60)
        let peers = try cloud.dataset().peers.map { PeerId($0.id) }
        func ids(_ peer: PeerId) throws -> [Int32] {
            try h.accountPostbox().readSync { tx in
                var out: [Int32] = []
                try tx.messages.scan(peer: peer, newestFirst: false) {
                    out.append($0.id.id); return true
                }
                return out.sorted()
            }
        }
        let before = try Dictionary(uniqueKeysWithValues: peers.map { ($0, try ids($0)) })
        XCTAssertGreaterThan(before.values.map(\.count).reduce(0, +), 100, "sync stored history to trim")
        let referencesBefore = try h.accountPostbox().readSync { try $0.mediaReferences.count() }

        try h.writeJob(
            "retention",
            """
            name: retention
            kind: history-retention
            timeout: 5m
            params:
              maxMessagesPerPeer: 20
              keepNewest: 10
              batchSize: 10
            """)

        // Dry run: lists per peer what would go and why; the file is untouched.
        let dry = try h.run(["run", "retention", "--dry-run", "--json"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        let expectedRemoved = before.values.map { max(0, $0.count - 20) }.reduce(0, +)
        let dryJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any], dry.stdout)
        XCTAssertEqual(((dryJSON["counters"] as? [String: Any])?["messages_removed"] as? NSNumber)?.intValue, expectedRemoved)
        let list = try XCTUnwrap(dryJSON["would_remove"] as? [[String: Any]])
        XCTAssertEqual(list.count, before.values.filter { $0.count > 20 }.count)
        XCTAssertTrue(list.allSatisfy { $0["reason"] as? String == "count" }, "\(list)")
        XCTAssertEqual(try peers.map { try ids($0) }, peers.map { before[$0]! }, "a dry run removes nothing")

        // The run: the newest 20 of each peer stay, the rest are trimmed holes, no dangling reference.
        let run = try h.run(["run", "retention", "-v"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("messages_removed: \(expectedRemoved)"), run.stdout)
        // The report's line for people shows its fields once, not restated in words first.
        XCTAssertTrue(run.stderr.contains("] retention.report account=0 "), run.stderr)
        XCTAssertFalse(run.stderr.contains("retention.report: retention retention.report"), run.stderr)
        // A fresh connection per look: this test process never keeps one open while it opens
        // another on the same file.
        func store() throws -> Postbox { try h.accountPostbox() }
        for peer in peers {
            let now = try ids(peer), then = before[peer]!
            XCTAssertEqual(now, Array(then.suffix(20)), "peer \(peer)")
            let holes = try store().readSync { try $0.holes.entries(peer: peer) }
            if then.count > 20 {
                XCTAssertEqual(holes, [HistoryHole(then.first!...(now.first! - 1), kind: .trimmed)], "peer \(peer)")
            }
        }
        XCTAssertEqual(try store().checkHistoryConsistency(), [])
        XCTAssertEqual(try store().integrityCheck(), ["ok"])
        XCTAssertLessThan(try store().readSync { try $0.mediaReferences.count() }, referencesBefore, "references went with their messages")
        let finished = h.logEvents().last { $0["event"] as? String == "retention.report" }
        XCTAssertEqual((finished?["messages_removed"] as? NSNumber)?.intValue, expectedRemoved)
        XCTAssertEqual((finished?["by_peer"] as? [Any])?.count, list.count)

        // stats --database: tables, peers, WAL and free pages, as text and JSON.
        let text = try h.run(["stats", "--database"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("by table (dbstat)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("messages"), text.stdout)
        let json = try h.run(["stats", "--database", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        let accounts = try XCTUnwrap(object["accounts"] as? [[String: Any]], json.stdout)
        let tables = try XCTUnwrap(accounts.first?["by_table"] as? [[String: Any]])
        let messagesRow = try XCTUnwrap(tables.first { $0["table"] as? String == "messages" })
        XCTAssertEqual((messagesRow["rows"] as? NSNumber)?.intValue, before.values.map { min(20, $0.count) }.reduce(0, +))
        XCTAssertEqual((accounts.first?["by_peer"] as? [Any])?.count, peers.count)
        XCTAssertEqual((accounts.first?["free_pages"] as? NSNumber)?.intValue, 0, "the run returned every free page")

        // A plain sync leaves trimmed ranges alone: nothing new, no history call.
        try cloud.resetCounters()
        let plain = try h.run(["run", "sync", "-v"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(try cloud.counters().methods["messages.getHistory"] ?? 0, 0)
        XCTAssertTrue(plain.stdout.contains("holes_open: 0"), "trimmed ranges are not open gaps: \(plain.stdout)")

        // Asked for one peer, sync fetches its trimmed range again from the cloud.
        let target = try XCTUnwrap(peers.first { before[$0]!.count > 20 })
        try h.writeJob(
            "refill",
            """
            name: refill
            kind: sync-history
            timeout: 2m
            params:
              peers: [\(target.rawValue)]
              refillTrimmed: true
              requestRate: 500
            """)
        let refill = try h.run(["run", "refill"])
        XCTAssertEqual(refill.status, 0, refill.stderr)
        XCTAssertEqual(try ids(target), before[target]!, "the trimmed range is back")
        XCTAssertEqual(try store().readSync { try $0.holes.entries(peer: target) }, [])
        for peer in peers where peer != target { XCTAssertEqual(try ids(peer).count, min(20, before[peer]!.count)) }
        XCTAssertEqual(try store().checkHistoryConsistency(), [])
    }

    /// `maxSize` holds for the database as it stands after the process exits and its WAL is
    /// checkpointed, the run's own closing record included, not only for the figure the run
    /// measured before writing that record.
    func testSizeLimitHoldsForTheFileAfterTheProcessExits() throws {
        let cloud = try startCloudd(["--seed", "62", "--dcs", "1", "--peers", "8", "--messages-per-peer", "80", "--cdn-fraction", "0"])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 80)
        func settledBytes() throws -> Int64 {
            let store = try h.accountPostbox(readOnly: false)
            _ = try store.checkpointWAL(truncate: true)
            return try store.databaseBytes()
        }
        let before = try settledBytes()
        let limit = before * 6 / 10
        try h.writeJob(
            "retention",
            """
            name: retention
            kind: history-retention
            params:
              maxSize: \(limit)
              keepNewest: 2
              batchSize: 50
            """)
        // Each run adds its record; a dozen runs fill pages of the run table, so some run's
        // closing record needs a new page after its last measurement.
        for round in 1...12 {
            let run = try h.run(["run", "retention", "--json"])
            XCTAssertEqual(run.status, 0, run.stderr)
            let after = try settledBytes()
            XCTAssertLessThanOrEqual(after, limit, "round \(round): \(after) > \(limit) once the run's record is in the file")
            var st = stat()
            XCTAssertEqual(stat(dbPath(h), &st), 0)
            XCTAssertLessThanOrEqual(Int64(st.st_size), limit, "round \(round): the file itself")
        }
    }

    /// A job without any limit is a configuration error (exit 78) that names what is missing.
    func testRetentionWithoutALimitIsAConfigurationError() throws {
        let h = JobrunHarness()
        try h.writeJob(
            "retention",
            """
            name: retention
            kind: history-retention
            params:
              keepNewest: 10
            """)
        let run = try h.run(["run", "retention", "-v"])
        XCTAssertEqual(run.status, 78, run.stderr)
        XCTAssertTrue(run.stderr.contains("maxAge, maxMessagesPerPeer, maxSize"), run.stderr)
    }
}
