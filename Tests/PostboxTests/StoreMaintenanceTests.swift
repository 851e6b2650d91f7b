import Foundation
import Postbox
import TestSupport
import XCTest

/// Store maintenance through the `ValueBox` protocol (`ValueBoxMaintenance`) on every engine:
/// the integrity check, usage, checkpoint and vacuum answer on each, each engine in its own
/// terms, where a store that was not an SQLite file used to answer "unsupported".
final class StoreMaintenanceTests: XCTestCase {
    private func fill(_ postbox: Postbox, messages: Int32) throws {
        // Text that does not compress (a server compresses long values), 2,000 bytes a message.
        var rng = SystemRandomNumberGenerator()
        let texts = (1...messages).map { _ in String((0..<2_000).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &rng)! }) }
        try postbox.transactionSync { tx in
            try tx.peers.set(Peer(id: PeerId(7), category: .group, title: "g"))
            try tx.messages.add(
                (1...messages).map {
                    Message(
                        id: MessageId(peerId: PeerId(7), namespace: MessageId.cloudNamespace, id: $0), timestamp: 100 + $0, text: texts[Int($0) - 1])
                })
        }
    }

    func testEveryEngineChecksMeasuresCheckpointsAndVacuumsItsStore() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            try fill(postbox, messages: 600)
            XCTAssertEqual(try postbox.integrityCheck(), ["ok"])

            let usage = try postbox.databaseUsage()
            let messages = try XCTUnwrap(usage.tables.first { $0.name == "messages" }, "\(usage.tables.map(\.name))")
            XCTAssertEqual(messages.rows, 600)
            XCTAssertGreaterThan(messages.payload, 600 * 2_000)
            XCTAssertEqual(usage.peers.first?.messages, 600)
            XCTAssertGreaterThan(try postbox.databaseBytes(), 600 * 2_000)
            XCTAssertFalse(try postbox.checkpointWAL(truncate: true, maxWaitMilliseconds: 5_000).busy)

            try postbox.transactionSync { tx in
                for id in Int32(1)...600 { try tx.messages.remove(MessageId(peerId: PeerId(7), namespace: MessageId.cloudNamespace, id: id)) }
            }
            let reclaimed = try postbox.compact()
            XCTAssertGreaterThan(reclaimed, 0, "the space of 600 deleted messages is returned")
            XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
            XCTAssertLessThan(try postbox.databaseBytes(), 600 * 2_000)

            switch store.engine {
            case .sqlite, .encryptedSqlite:
                XCTAssertNotEqual(usage.source, .server)
                XCTAssertGreaterThan(postbox.fileSize(), 0)
            case .postgres:
                // Sizes are the server's: bytes on its disk and the live rows; no file here.
                XCTAssertEqual(usage.source, .server)
                XCTAssertEqual(usage.walBytes, 0)
                XCTAssertGreaterThanOrEqual(messages.bytes, messages.payload)
                XCTAssertEqual(postbox.fileSize(), 0)
                XCTAssertEqual(try postbox.freePageCount(), 0)
            }
        }
    }
}
