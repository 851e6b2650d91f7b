import Foundation
import XCTest

@testable import Postbox

/// Rows decoded with `PostboxRowDecoder` are validated while they are read: a truncated record,
/// or one whose fields claim more bytes than the record holds, throws — whether the type walks
/// its fields in one pass (`Message`), looks them up by name, or reads nothing at all.
final class RowValidationTests: XCTestCase {
    /// Reads no field: the row must still be checked in full.
    struct ReadsNothing: PostboxCoding {
        static let postboxTypeName = "Message"
        init() {}
        init(decoder: PostboxDecoder) throws {}
        func encode(_ e: PostboxEncoder) {}
    }

    /// Looks its fields up by name (lookups cannot throw).
    struct ByName: PostboxCoding {
        static let postboxTypeName = "Message"
        var text = ""
        init() {}
        init(decoder: PostboxDecoder) throws { text = decoder.decodeString(forKey: "t") ?? "" }
        func encode(_ e: PostboxEncoder) {}
    }

    private func message() -> Message {
        Message(id: MessageId(peerId: PeerId(3), id: 9), timestamp: 1234, authorId: PeerId(8), text: "a text long enough to need the heap")
    }

    /// The record with its header length fixed up to `body` (so only the fields lie).
    private func record(_ data: Data, fields body: Data) -> Data {
        var out = Data(data.prefix(4))
        withUnsafeBytes(of: Int32(body.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(body)
        return out
    }

    func testEveryTruncationThrows() throws {
        let full = PostboxEncoder.encode(message())
        let fields = full.dropFirst(8)
        var messages = PostboxRowDecoder(Message.self)
        var names = PostboxRowDecoder(ByName.self)
        var nothing = PostboxRowDecoder(ReadsNothing.self)
        var decodedOK = 0
        for cut in 0..<fields.count {
            // Every prefix of the fields that does not end on a field boundary is malformed.
            let row = record(full, fields: Data(fields.prefix(cut)))
            let m = row.withUnsafeBytes { try? messages.decode($0) }
            let n = row.withUnsafeBytes { try? names.decode($0) }
            let z = row.withUnsafeBytes { try? nothing.decode($0) }
            let eager = try? PostboxDecoder.decode(Message.self, from: row)
            XCTAssertEqual(m == nil, eager == nil, "one-pass and eager validation agree at \(cut)")
            XCTAssertEqual(n == nil, eager == nil, "lookups by name agree at \(cut)")
            XCTAssertEqual(z == nil, eager == nil, "a type reading nothing agrees at \(cut)")
            if m != nil { decodedOK += 1 }
            // Truncating the buffer below what the header claims always throws.
            let short = full.prefix(8 + cut)
            XCTAssertThrowsError(try short.withUnsafeBytes { try messages.decode($0) })
        }
        XCTAssertGreaterThan(decodedOK, 0, "prefixes ending on a field boundary decode")
        XCTAssertLessThan(decodedOK, fields.count)
        // And the decoder still reads a good row afterwards.
        let again = try full.withUnsafeBytes { try messages.decode($0) }
        XCTAssertEqual(again.text, message().text)
        XCTAssertEqual(again.timestamp, 1234)
        XCTAssertEqual(again.authorId, PeerId(8))
    }

    func testLyingLengthsThrow() throws {
        let full = PostboxEncoder.encode(message())
        var fields = Data(full.dropFirst(8))
        // The text field: name length 1, "t", type 4 (string), then its Int32 length.
        let marker = Data([1, UInt8(ascii: "t"), 4])
        let at = try XCTUnwrap(fields.range(of: marker)).upperBound
        for lie in [Int32(1 << 20), Int32(-1), Int32(fields.count)] {
            var bad = fields
            withUnsafeBytes(of: lie.littleEndian) { bad.replaceSubrange(at..<(at + 4), with: $0) }
            let row = record(full, fields: bad)
            var messages = PostboxRowDecoder(Message.self)
            var names = PostboxRowDecoder(ByName.self)
            var nothing = PostboxRowDecoder(ReadsNothing.self)
            XCTAssertThrowsError(try row.withUnsafeBytes { try messages.decode($0) }, "length \(lie)")
            XCTAssertThrowsError(try row.withUnsafeBytes { try names.decode($0) }, "length \(lie)")
            XCTAssertThrowsError(try row.withUnsafeBytes { try nothing.decode($0) }, "length \(lie)")
            XCTAssertThrowsError(try PostboxDecoder.decode(Message.self, from: row))
        }
        fields.append(contentsOf: [200, 1, 2])  // a name running past the end
        XCTAssertThrowsError(
            try record(full, fields: fields).withUnsafeBytes {
                var r = PostboxRowDecoder(Message.self); return try r.decode($0)
            })
    }
}
