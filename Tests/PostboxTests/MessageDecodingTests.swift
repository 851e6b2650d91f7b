import Foundation
import XCTest

@testable import Postbox

/// A message as another build might write it: fields reordered, unknown ones, a known name with
/// another type, and duplicates. `Message` decodes it in one pass (`forEachField`); the result
/// must be what lookups by name would give.
struct OddMessage: PostboxCoding {
    static let postboxTypeName = "Message"
    init() {}
    init(decoder: PostboxDecoder) throws {}
    func encode(_ e: PostboxEncoder) {
        e.encode("future", forKey: "newField")
        e.encode(Int32(1_700_000_000), forKey: "ts")
        e.encode(Int32(12), forKey: "t")  // "t" with the wrong type: ignored
        e.encode("hello", forKey: "t")
        e.encode("second", forKey: "t")  // a duplicate: the first one counts
        e.encode(Int64(77), forKey: "p")
        e.encode(Int32(5), forKey: "i")
        e.encode(Int64(99), forKey: "pp")  // a longer name sharing a prefix
        e.encodeObjectArray([], forKey: "m")
    }
}

final class MessageDecodingTests: XCTestCase {
    func testFieldWordsMatchTheDecoder() {
        XCTAssertEqual(Message.fieldP, PostboxDecoder.fieldWord("p", .int64))
        XCTAssertEqual(Message.fieldN, PostboxDecoder.fieldWord("n", .int32))
        XCTAssertEqual(Message.fieldI, PostboxDecoder.fieldWord("i", .int32))
        XCTAssertEqual(Message.fieldTs, PostboxDecoder.fieldWord("ts", .int32))
        XCTAssertEqual(Message.fieldA, PostboxDecoder.fieldWord("a", .int64))
        XCTAssertEqual(Message.fieldT, PostboxDecoder.fieldWord("t", .string))
        XCTAssertEqual(Message.fieldM, PostboxDecoder.fieldWord("m", .objectArray))
    }

    func testOnePassDecodingKeepsLookupSemantics() throws {
        let data = PostboxEncoder.encode(OddMessage())
        let m = try PostboxDecoder.decode(Message.self, from: data)
        XCTAssertEqual(m.id, MessageId(peerId: PeerId(77), namespace: 0, id: 5), "missing namespace reads as 0")
        XCTAssertEqual(m.timestamp, 1_700_000_000)
        XCTAssertEqual(m.text, "hello")
        XCTAssertNil(m.authorId)
        XCTAssertTrue(m.media.isEmpty)
        // The same through name lookups, as any other type decodes.
        struct ByName: PostboxCoding {
            static let postboxTypeName = "Message"
            var p: Int64?, t: String?, ts: Int32?, n: Int32?
            init(decoder d: PostboxDecoder) throws {
                p = d.decodeInt64(forKey: "p"); t = d.decodeString(forKey: "t"); ts = d.decodeInt32(forKey: "ts"); n = d.decodeInt32(forKey: "n")
            }
            func encode(_ e: PostboxEncoder) {}
        }
        let byName = try PostboxDecoder.decode(ByName.self, from: data)
        XCTAssertEqual(byName.p, 77)
        XCTAssertEqual(byName.t, m.text)
        XCTAssertEqual(byName.ts, m.timestamp)
        XCTAssertNil(byName.n)
    }

    func testRoundTripWithAuthor() throws {
        let original = Message(id: MessageId(peerId: PeerId(-3), namespace: 2, id: .max), timestamp: .min, authorId: PeerId(.max), text: "ünïcode ✓")
        let m = try PostboxDecoder.decode(Message.self, from: PostboxEncoder.encode(original))
        XCTAssertEqual(m.index, original.index)
        XCTAssertEqual(m.authorId, original.authorId)
        XCTAssertEqual(m.text, original.text)
    }
}
