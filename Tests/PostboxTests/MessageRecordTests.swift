import Foundation
import XCTest

@testable import Postbox

/// The message table's compact layout: what it holds, that it is told apart from the legacy
/// self-describing records, and that every malformed row is refused with an error.
final class MessageRecordTests: XCTestCase {
    override func setUp() { PostboxTypeRegistry.register(TestPhoto.self) }

    private func sample(author: PeerId? = PeerId(8), media: [any Media] = [TestPhoto(id: 5, resourceIds: ["r1", "r2"])]) -> Message {
        Message(
            id: MessageId(peerId: PeerId(-3), namespace: 2, id: .max), timestamp: .min, authorId: author, text: "ünïcode ✓ text", media: media)
    }

    private func decode(_ data: Data) throws -> Message {
        var reader = MessageRecord.Reader()
        return try data.withUnsafeBytes { try reader.decode($0) }
    }

    private func assertSame(_ a: Message, _ b: Message, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.index, b.index, file: file, line: line)
        XCTAssertEqual(a.authorId, b.authorId, file: file, line: line)
        XCTAssertEqual(a.text, b.text, file: file, line: line)
        XCTAssertEqual(a.media.map { $0 as? TestPhoto }, b.media.map { $0 as? TestPhoto }, file: file, line: line)
    }

    func testTheTagIsNeverTheFirstByteOfALegacyRecord() {
        XCTAssertNotEqual(UInt8(truncatingIfNeeded: UInt32(bitPattern: Message.postboxTypeHash)), MessageRecord.compactTag)
        XCTAssertFalse(PostboxEncoder.encode(sample()).withUnsafeBytes { MessageRecord.isCompact($0) })
        XCTAssertTrue(MessageRecord.encode(sample()).withUnsafeBytes { MessageRecord.isCompact($0) })
    }

    func testRoundTripsWithAndWithoutAuthorAndMedia() throws {
        for message in [
            sample(), sample(author: nil), sample(media: []), sample(author: nil, media: []), Message(id: MessageId(peerId: PeerId(1), id: 1), timestamp: 0),
        ] {
            let data = MessageRecord.encode(message)
            assertSame(try decode(data), message)
        }
        // Fixed part, author, text length and bytes: no field name anywhere.
        let plain = Message(id: MessageId(peerId: PeerId(1), id: 2), timestamp: 3, authorId: PeerId(4), text: "abc")
        XCTAssertEqual(MessageRecord.encode(plain).count, MessageRecord.fixedSize + 8 + 4 + 3)
        XCTAssertLessThan(MessageRecord.encode(sample()).count, PostboxEncoder.encode(sample()).count)
    }

    func testLegacyRecordsStillRead() throws {
        assertSame(try decode(PostboxEncoder.encode(sample())), sample())
        assertSame(try decode(PostboxEncoder.encode(sample(author: nil, media: []))), sample(author: nil, media: []))
    }

    func testLegacyConversionKeepsEveryFieldAndMediaBytes() throws {
        for message in [sample(), sample(author: nil), sample(media: []), sample(author: nil, media: [])] {
            let legacy = PostboxEncoder.encode(message)
            let encoder = PostboxEncoder()
            try legacy.withUnsafeBytes { try MessageRecord.convertLegacy($0, into: encoder) }
            XCTAssertEqual(encoder.makeData(), MessageRecord.encode(message), "the rewrite is what this build writes")
        }
        // A legacy row as another build wrote it: the first of each field counts, as when read.
        let odd = PostboxEncoder.encode(OddMessage())
        let encoder = PostboxEncoder()
        try odd.withUnsafeBytes { try MessageRecord.convertLegacy($0, into: encoder) }
        assertSame(try decode(encoder.makeData()), try PostboxDecoder.decode(Message.self, from: odd))
        // Malformed legacy rows are refused, not rewritten.
        let truncated = Data(PostboxEncoder.encode(sample()).dropLast(3))
        XCTAssertThrowsError(try truncated.withUnsafeBytes { try MessageRecord.convertLegacy($0, into: PostboxEncoder()) })
    }

    func testEveryTruncationAndTrailingByteThrows() throws {
        for message in [sample(), sample(author: nil, media: [])] {
            let full = MessageRecord.encode(message)
            for cut in 0..<full.count {
                XCTAssertThrowsError(try decode(Data(full.prefix(cut))), "cut at \(cut) of \(full.count)") { error in
                    if cut > 0 { XCTAssertTrue("\(error)".contains("message record") || "\(error)".contains("object array"), "\(error)") }
                }
            }
            XCTAssertThrowsError(try decode(full + Data([0]))) { XCTAssertTrue("\($0)".contains("after its last part"), "\($0)") }
        }
    }

    func testLyingLengthsAndUnknownFlagsThrow() throws {
        let full = MessageRecord.encode(sample(author: nil, media: []))
        for lie in [Int32(1 << 20), Int32(-1), Int32(full.count)] {
            var bad = full
            withUnsafeBytes(of: lie.littleEndian) { bad.replaceSubrange(MessageRecord.fixedSize..<(MessageRecord.fixedSize + 4), with: $0) }
            XCTAssertThrowsError(try decode(bad), "text length \(lie)") { XCTAssertTrue("\($0)".contains("text length"), "\($0)") }
        }
        var flags = full
        flags[flags.startIndex + 1] = 0x80
        XCTAssertThrowsError(try decode(flags)) { XCTAssertTrue("\($0)".contains("unknown flags"), "\($0)") }
        // Media that claim more bytes than the row holds.
        var media = MessageRecord.encode(sample(author: nil))
        let mediaAt = MessageRecord.fixedSize + 4 + sample().text.utf8.count
        withUnsafeBytes(of: Int32(1000).littleEndian) { media.replaceSubrange((mediaAt + 8)..<(mediaAt + 12), with: $0) }
        XCTAssertThrowsError(try decode(media))
    }
}
