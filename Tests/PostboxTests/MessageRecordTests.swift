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
        // Media that claim more bytes than the row holds (after one listed media id).
        var media = MessageRecord.encode(sample(author: nil))
        let idsAt = MessageRecord.fixedSize + 4 + sample().text.utf8.count
        let mediaAt = idsAt + 4 + 12
        withUnsafeBytes(of: Int32(1000).littleEndian) { media.replaceSubrange((mediaAt + 8)..<(mediaAt + 12), with: $0) }
        XCTAssertThrowsError(try decode(media))
        XCTAssertThrowsError(try media.withUnsafeBytes { try MessageRecord.indexEntries($0) }) { XCTAssertTrue("\($0)".contains("object array"), "\($0)") }
        // A media id count past the row's end.
        var ids = MessageRecord.encode(sample(author: nil))
        withUnsafeBytes(of: Int32(1000).littleEndian) { ids.replaceSubrange(idsAt..<(idsAt + 4), with: $0) }
        XCTAssertThrowsError(try decode(ids)) { XCTAssertTrue("\($0)".contains("media id count"), "\($0)") }
        XCTAssertThrowsError(try ids.withUnsafeBytes { try MessageRecord.indexEntries($0) }) { XCTAssertTrue("\($0)".contains("media id count"), "\($0)") }
        // Listed ids without media.
        var lonely = MessageRecord.encode(sample(author: nil, media: []))
        lonely[lonely.startIndex + 1] = MessageRecord.listsMediaIds
        XCTAssertThrowsError(try decode(lonely)) { XCTAssertTrue("\($0)".contains("unknown flags"), "\($0)") }
    }

    func testIndexEntriesAreReadWithoutTheMedia() throws {
        let two = Message(
            id: MessageId(peerId: PeerId(4), namespace: 0, id: 9), timestamp: 77, text: "t",
            media: [TestPhoto(id: 5, resourceIds: ["a"]), TestPhoto(id: -6, resourceIds: [])])
        let entries = try XCTUnwrap(try MessageRecord.encode(two).withUnsafeBytes { try MessageRecord.indexEntries($0) })
        XCTAssertEqual(entries.index, two.index)
        XCTAssertEqual(entries.mediaIds, [MediaId(namespace: 1, id: 5), MediaId(namespace: 1, id: -6)])
        let plain = try XCTUnwrap(try MessageRecord.encode(sample(media: [])).withUnsafeBytes { try MessageRecord.indexEntries($0) })
        XCTAssertEqual(plain.mediaIds, [])
        XCTAssertNil(try PostboxEncoder.encode(two).withUnsafeBytes { try MessageRecord.indexEntries($0) }, "a legacy row is decoded whole")
        var trailing = MessageRecord.encode(two)
        trailing.append(0)
        XCTAssertThrowsError(try trailing.withUnsafeBytes { try MessageRecord.indexEntries($0) }) {
            XCTAssertTrue("\($0)".contains("after its last part"), "\($0)")
        }
    }

    func testALegacyRowWithMediaOfAnUnknownTypeIsConvertedWithoutListingIds() throws {
        let legacy = PostboxEncoder.encode(Message(id: MessageId(peerId: PeerId(1), id: 1), timestamp: 2, text: "x", media: [UnknownMedia()]))
        let encoder = PostboxEncoder()
        try legacy.withUnsafeBytes { try MessageRecord.convertLegacy($0, into: encoder) }
        let converted = encoder.makeData()
        XCTAssertEqual(converted[converted.startIndex + 1], MessageRecord.hasMedia, "media kept, ids not listed")
        XCTAssertNil(try converted.withUnsafeBytes { try MessageRecord.indexEntries($0) }, "such a row is decoded whole")
        XCTAssertEqual(try decode(converted).text, "x")
    }
}

/// A media type no process registers: what a newer build may have stored.
private struct UnknownMedia: Media {
    static let postboxTypeName = "UnknownMediaOfAFutureBuild"
    var id: MediaId? { MediaId(namespace: 9, id: 9) }
    init() {}
    init(decoder: PostboxDecoder) throws {}
    func encode(_ e: PostboxEncoder) { e.encode(Int32(1), forKey: "v") }
}
