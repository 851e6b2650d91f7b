import Foundation
import TestSupport
import XCTest

@testable import Postbox

/// Stores written before the compact message layout: opened, they are rewritten batch by batch;
/// a process killed midway leaves a store whose rows are in both layouts and all readable, and
/// the next opener finishes. Media of types the rewriting process never registered survive.
final class MessageRecordConversionTests: XCTestCase {
    let testkit = Products.executable("jobrun-testkit")

    override func setUp() { PostboxTypeRegistry.register(TestPhoto.self) }

    private func messages(_ count: Int) -> [Message] {
        (1...count).map { (i: Int) -> Message in
            let id = MessageId(peerId: PeerId(Int64(i % 3 + 1)), id: Int32(i))
            let author: PeerId? = i % 2 == 0 ? PeerId(7) : nil
            let media: [any Media] = i % 4 == 0 ? [TestPhoto(id: Int64(i), resourceIds: ["r\(i)"])] : []
            return Message(id: id, timestamp: Int32(1_000 + i), authorId: author, text: "message \(i)", media: media)
        }
    }

    /// The store as a version-1 build left it: schema version 1, every message row a `Message`
    /// root record.
    private func makeLegacyStore(_ store: TestStore, _ messages: [Message]) throws {
        let postbox = try store.postbox()
        try postbox.transactionSync { tx in
            try tx.messages.add(messages)
            let box = try tx.messages.valueBox
            for m in messages {
                try box.set(PostboxTableId.messages.table, key: MessageHistoryTable.messageKey(m.index), value: PostboxEncoder.encode(m))
            }
            try tx.metadata.setSchemaVersion(1)
        }
    }

    /// Rows in the compact layout and in the legacy one, read straight from the engine.
    private func layouts(_ store: TestStore) throws -> (compact: Int, legacy: Int) {
        let box = try store.valueBox(readOnly: true)
        try box.beginRead()
        defer { box.rollback() }
        var compact = 0, legacy = 0
        try box.rangeValues(PostboxTableId.messages.table, .all, limit: .max) { value in
            if MessageRecord.isCompact(value) { compact += 1 } else { legacy += 1 }
            return true
        }
        return (compact, legacy)
    }

    private func assertHolds(_ postbox: Postbox, _ messages: [Message], file: StaticString = #filePath, line: UInt = #line) throws {
        try postbox.readSync { tx in
            var scanned = 0
            for peer in 1...3 {
                try tx.messages.scan(peer: PeerId(Int64(peer)), newestFirst: false) { _ in
                    scanned += 1
                    return true
                }
            }
            XCTAssertEqual(scanned, messages.count, "every row scans", file: file, line: line)
            for m in messages {
                let read = try XCTUnwrap(try tx.messages.get(m.id), file: file, line: line)
                XCTAssertEqual(read.index, m.index, file: file, line: line)
                XCTAssertEqual(read.authorId, m.authorId, file: file, line: line)
                XCTAssertEqual(read.text, m.text, file: file, line: line)
                XCTAssertEqual(read.media.map { $0 as? TestPhoto }, m.media.map { $0 as? TestPhoto }, file: file, line: line)
            }
            XCTAssertEqual(try tx.messages.messages(withMedia: MediaId(namespace: 1, id: 8)), [MessageId(peerId: PeerId(3), id: 8)])
        }
    }

    func testAKilledConversionLeavesEveryRowReadableAndTheNextOpenerFinishes() throws {
        try forEachEngine { store in
            let all = messages(1_000)
            try makeLegacyStore(store, all)
            // Batches of 100; the child stalls inside the fourth batch, three committed.
            let child = try ChildProcess(testkit, ["convert-legacy-messages", try store.childSpec(), "100", "3"])
            XCTAssertTrue(child.waitForOutput("midway", timeout: 300), "the child never reached the fourth batch: \(child.stderr)")
            child.signal(SIGKILL)
            child.wait()

            let midway = try layouts(store)
            XCTAssertEqual(midway.compact, 300, "the committed batches stay rewritten")
            XCTAssertEqual(midway.legacy, 700, "the killed batch is rolled back")
            try assertHolds(try store.postbox(readOnly: true), all)

            let postbox = try store.postbox()
            let done = try layouts(store)
            XCTAssertEqual(done.compact, 1_000)
            XCTAssertEqual(done.legacy, 0)
            try assertHolds(postbox, all)
            try postbox.readSync { tx in
                XCTAssertEqual(try tx.metadata.schemaVersion(), Postbox.schemaVersion)
                XCTAssertNil(try tx.metadata.messageRecordCursor(), "nothing is left to rewrite")
            }
            if store.engine.isSQLite { XCTAssertEqual(try postbox.integrityCheck(), ["ok"]) }
            XCTAssertEqual(try postbox.checkHistoryConsistency(), [])
        }
    }

    func testANewStoreHasNothingToRewriteAndAnUndecodableRowIsLeftAsItIs() throws {
        try forEachEngine { store in
            let fresh = try store.postbox()
            try fresh.transactionSync { try $0.messages.add(self.messages(10)) }
            try fresh.readSync { XCTAssertNil(try $0.metadata.messageRecordCursor()) }
            XCTAssertEqual(try layouts(store).compact, 10)

            let legacy = store.sibling()
            try makeLegacyStore(legacy, messages(10))
            let bad = Message(id: MessageId(peerId: PeerId(1), id: 99), timestamp: 5_000, text: "bad")
            try legacy.postbox(migrations: []).transactionSync { tx in
                try tx.messages.add([bad])
                let row = Data(PostboxEncoder.encode(bad).dropLast(2))  // truncated: does not decode
                try tx.messages.valueBox.set(PostboxTableId.messages.table, key: MessageHistoryTable.messageKey(bad.index), value: row)
                try tx.metadata.setSchemaVersion(1)
            }
            let postbox = try legacy.postbox()
            let after = try layouts(legacy)
            XCTAssertEqual(after.compact, 10)
            XCTAssertEqual(after.legacy, 1, "the undecodable row is kept, not dropped")
            XCTAssertThrowsError(try postbox.readSync { try $0.messages.get(bad.id) }) { XCTAssertTrue("\($0)".contains("record"), "\($0)") }
        }
    }
}
