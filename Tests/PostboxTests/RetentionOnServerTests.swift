import Foundation
import Postbox
import TestSupport
import XCTest

/// History retention's size limit on both engines: on SQLite it bounds the file's pages, on
/// PostgreSQL the bytes of the store's live rows (the server keeps freed space for reuse rather
/// than returning it, so its files are not what a delete can shrink).
final class RetentionOnServerTests: XCTestCase {
    override func setUp() { PostboxTypeRegistry.register(TestPhoto.self) }

    func testSizeLimitEndsUnderItOnEitherEngine() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let peers = 60, perPeer = 100, keep = 10
            try RetentionFixture.fill(postbox, peers: peers, perPeer: perPeer)
            _ = try postbox.checkpointWAL(truncate: true)
            let before = try postbox.databaseBytes()
            XCTAssertGreaterThan(before, Int64(peers * perPeer * 100), "the store measures its rows: \(before)")
            let limit = before * 4 / 10

            var policy = RetentionFixture.policy()
            policy.sizeLimit = limit
            policy.keepNewest = keep
            policy.batchSize = 500
            let report = try HistoryRetention(postbox: postbox, policy: policy).run()

            XCTAssertTrue(report.underLimit, "\(store.engine): \(report.databaseBytesAfter) > \(limit)")
            let after = try postbox.databaseBytes()
            XCTAssertLessThanOrEqual(after, limit, "\(store.engine)")
            XCTAssertGreaterThan(after, limit / 2, "\(store.engine): trimmed to the limit, not far below it: \(after)")
            XCTAssertEqual(try postbox.checkHistoryConsistency(), [], "\(store.engine)")
            for p in 0..<peers {
                let ids = try RetentionFixture.ids(postbox, RetentionFixture.peerId(p))
                XCTAssertEqual(Array(ids.suffix(keep)), Array(Int32(perPeer - keep + 1)...Int32(perPeer)), "\(store.engine): peer \(p) keeps its newest")
            }

            // The usage report agrees with the measure, table by table.
            let usage = try postbox.databaseUsage()
            let messages = try XCTUnwrap(usage.tables.first { $0.name == "messages" }, "\(usage.tables.map(\.name))")
            let stored = try postbox.readSync { tx in try (0..<peers).reduce(0) { $0 + (try tx.messages.count(peer: RetentionFixture.peerId($1))) } }
            XCTAssertEqual(Int(messages.rows), stored, "\(store.engine)")
            XCTAssertEqual(usage.peers.reduce(0) { $0 + $1.messages }, Int64(stored), "\(store.engine)")
            if store.engine == .postgres {
                XCTAssertEqual(usage.source, .server)
                XCTAssertEqual(usage.usedBytes, after, "live rows are the measure")
                XCTAssertGreaterThanOrEqual(usage.fileBytes, after, "the server's disk holds at least the live rows")
            }
        }
    }
}
