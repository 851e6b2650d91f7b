import Foundation
import Postbox
import TestSupport
import XCTest

/// A record with more fields than the decoder indexes inline (16), names longer than the six
/// bytes a field's index word holds (and two that share those six bytes), and a duplicate name.
struct WideRecord: PostboxCoding, Equatable {
    var values: [Int64] = (0..<40).map { Int64($0 * 3) }
    var longA = "first long name"
    var longB = "second long name"
    var shortAfter: Int32 = 7

    init() {}
    init(decoder d: PostboxDecoder) throws {
        // Read out of written order, twice, and a missing field in between.
        shortAfter = d.decodeInt32(forKey: "z") ?? 0
        values = (0..<40).reversed().map { d.decodeInt64(forKey: "field\($0)") ?? -1 }.reversed()
        XCTAssertNil(d.decodeInt64(forKey: "missing"))
        XCTAssertNil(d.decodeString(forKey: "sharedPrefixC"))
        longB = d.decodeString(forKey: "sharedPrefixB") ?? ""
        longA = d.decodeString(forKey: "sharedPrefixA") ?? ""
        XCTAssertNil(d.decodeInt32(forKey: "sharedPrefixA"), "same name, other type: nil")
        XCTAssertEqual(d.decodeInt64(forKey: "field0"), values[0], "a field read before can be read again")
    }
    func encode(_ e: PostboxEncoder) {
        for (i, v) in values.enumerated() { e.encode(v, forKey: "field\(i)") }
        e.encode(longA, forKey: "sharedPrefixA")
        e.encode(longB, forKey: "sharedPrefixB")
        e.encode(shortAfter, forKey: "z")
    }
}

/// A type that keeps its decoder (which `decode(_:borrowing:)` forbids, but must not corrupt
/// the next row of a `PostboxRowDecoder`).
final class DecoderKeeper: @unchecked Sendable {
    nonisolated(unsafe) static var kept: [PostboxDecoder] = []
}

struct KeepsDecoder: PostboxCoding {
    var value: Int32
    init(value: Int32) { self.value = value }
    init(decoder: PostboxDecoder) throws {
        value = decoder.decodeInt32(forKey: "v") ?? 0
        DecoderKeeper.kept.append(decoder)
    }
    func encode(_ e: PostboxEncoder) { e.encode(value, forKey: "v") }
}

final class DecoderIndexTests: XCTestCase {
    func testManyFieldsLongNamesAndOutOfOrderReads() throws {
        let record = WideRecord()
        let data = PostboxEncoder.encode(record)
        XCTAssertEqual(try PostboxDecoder.decode(WideRecord.self, from: data), record)
        try data.withUnsafeBytes { XCTAssertEqual(try PostboxDecoder.decode(WideRecord.self, borrowing: $0), record) }
    }

    func testFirstOfDuplicateNamesIsRead() throws {
        struct Dup: PostboxCoding {
            var a: Int32 = 0, b: Int32 = 0
            init() {}
            init(decoder d: PostboxDecoder) throws {
                a = d.decodeInt32(forKey: "x") ?? 0
                b = d.decodeInt32(forKey: "x") ?? 0
            }
            func encode(_ e: PostboxEncoder) { e.encode(Int32(1), forKey: "x"); e.encode(Int32(2), forKey: "x") }
        }
        let d = try PostboxDecoder.decode(Dup.self, from: PostboxEncoder.encode(Dup()))
        XCTAssertEqual([d.a, d.b], [1, 2], "reads continue after the last field found, as before")
    }

    func testRowDecoderReusesOneDecoderAcrossRows() throws {
        var rows = PostboxRowDecoder(WideRecord.self)
        var expected = WideRecord()
        for i in 0..<50 {
            expected.values[i % 40] = Int64(i)
            expected.longA = String(repeating: "a", count: i)
            let data = PostboxEncoder.encode(expected)
            try data.withUnsafeBytes { XCTAssertEqual(try rows.decode($0), expected) }
        }
        // Wrong type and truncated rows throw, and the decoder still works afterwards.
        let other = PostboxEncoder.encode(KeepsDecoder(value: 1))
        XCTAssertThrowsError(try other.withUnsafeBytes { try rows.decode($0) })
        var truncated = PostboxEncoder.encode(expected)
        truncated.removeLast(3)
        XCTAssertThrowsError(try truncated.withUnsafeBytes { try rows.decode($0) })
        try PostboxEncoder.encode(expected).withUnsafeBytes { XCTAssertEqual(try rows.decode($0), expected) }
    }

    func testRowDecoderGivesAFreshDecoderWhenOneIsKept() throws {
        DecoderKeeper.kept = []
        defer { DecoderKeeper.kept = [] }
        var rows = PostboxRowDecoder(KeepsDecoder.self)
        for v in Int32(0)..<3 {
            try PostboxEncoder.encode(KeepsDecoder(value: v)).withUnsafeBytes { XCTAssertEqual(try rows.decode($0).value, v) }
        }
        XCTAssertEqual(Set(DecoderKeeper.kept.map { ObjectIdentifier($0) }).count, 3)
    }

    func testMessageScanDecodesEveryRowInOrder() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("decoder-index-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let postbox = try Postbox(path: dir.appendingPathComponent("db.sqlite").path, key: TestRoot.storeKey)
        let peer = PeerId(5)
        try postbox.transactionSync { tx in
            try tx.messages.add(
                (1...300).map { Message(id: MessageId(peerId: peer, id: $0), timestamp: 1000 + $0, authorId: $0 % 2 == 0 ? PeerId(9) : nil, text: "m\($0)") })
        }
        let seen = try postbox.readSync { tx -> [Message] in
            var out: [Message] = []
            try tx.messages.scan(peer: peer, newestFirst: true) {
                out.append($0); return true
            }
            return out
        }
        XCTAssertEqual(seen.map(\.id.id), Array((1...300).reversed()))
        XCTAssertEqual(seen.map(\.text), (1...300).reversed().map { "m\($0)" })
        XCTAssertEqual(seen.map(\.authorId), (1...300).reversed().map { $0 % 2 == 0 ? PeerId(9) : nil })
        let got = try postbox.readSync { try $0.messages.get(MessageId(peerId: peer, id: 42)) }
        XCTAssertEqual(got?.text, "m42")
        XCTAssertEqual(got?.timestamp, 1042)
    }
}
