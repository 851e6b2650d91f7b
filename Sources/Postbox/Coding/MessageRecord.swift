import Foundation

/// The message table's values: a versioned binary layout that names no field, decoded in one
/// pass straight from the store's buffer (a range scan decodes millions of them).
///
/// Layout, version 1 (integers little-endian):
///
/// | bytes | content |
/// |---|---|
/// | 1 | `compactTag` (0x01): the layout's version |
/// | 1 | flags: bit 0 an author follows, bit 1 media follow, bit 2 the media's ids are listed (only with bit 1); other bits must be zero |
/// | 8 | peer id |
/// | 4 | namespace |
/// | 4 | id |
/// | 4 | timestamp |
/// | 8 | author peer id (only with flag bit 0) |
/// | 4 + n | text: UTF-8 byte count, then the bytes |
/// | 4 + 12k | media ids (only with flag bit 2): their count, then per id its namespace (4) and id (8), in media order |
/// | … | media (only with flag bit 1): an object array as `PostboxEncoder` writes one (count, then per object its type hash, length and fields), so media types stay polymorphic and self-describing |
///
/// The media ids are what the media index holds for the message: listed, they let history
/// retention remove a message's index entries without decoding its media. A record converted
/// from the legacy layout whose media include a type the converting process could not decode
/// does not list them (its ids are unknown there). The record ends exactly where its last part
/// ends. Rows written before this layout hold a
/// `Message` root record (its type hash first, whose low byte is never `compactTag`): they are
/// still read, and `Postbox` rewrites them in the background of opening
/// (`MessageRecordConversion`). A row that is neither is refused with an error naming what is
/// wrong and where.
enum MessageRecord {
    static let compactTag: UInt8 = 0x01
    static let hasAuthor: UInt8 = 1 << 0
    static let hasMedia: UInt8 = 1 << 1
    static let listsMediaIds: UInt8 = 1 << 2
    /// Tag, flags, peer, namespace, id, timestamp.
    static let fixedSize = 22

    /// Writes `message` in the compact layout (after `encoder.reset()`).
    static func encode(_ message: Message, into encoder: PostboxEncoder) {
        var flags: UInt8 = 0
        if message.authorId != nil { flags |= hasAuthor }
        if !message.media.isEmpty { flags |= hasMedia | listsMediaIds }
        encoder.appendByte(compactTag)
        encoder.appendByte(flags)
        encoder.appendInt64(message.index.id.peerId.rawValue)
        encoder.appendInt32(message.index.id.namespace)
        encoder.appendInt32(message.index.id.id)
        encoder.appendInt32(message.index.timestamp)
        if let author = message.authorId { encoder.appendInt64(author.rawValue) }
        encoder.appendLengthPrefixed(message.text)
        if !message.media.isEmpty {
            appendMediaIds(message.media.compactMap(\.id), into: encoder)
            encoder.appendObjectArrayPayload(message.media)
        }
    }

    private static func appendMediaIds(_ ids: [MediaId], into encoder: PostboxEncoder) {
        encoder.appendInt32(Int32(ids.count))
        for id in ids {
            encoder.appendInt32(id.namespace)
            encoder.appendInt64(id.id)
        }
    }

    /// The encoded bytes of `message` in the compact layout.
    static func encode(_ message: Message) -> Data {
        let encoder = PostboxEncoder(capacity: 128)
        encode(message, into: encoder)
        return encoder.makeData()
    }

    /// Whether a stored value is in the compact layout (otherwise it is a legacy root record).
    @inline(__always)
    static func isCompact(_ buffer: UnsafeRawBufferPointer) -> Bool {
        buffer.count > 0 && buffer.load(as: UInt8.self) == compactTag
    }

    /// The parts of a compact record up to its media objects, every length checked.
    private struct Parts {
        var flags: UInt8
        var author: Int64?
        var textStart: Int
        var textLength: Int
        var mediaIdsStart: Int
        var mediaIdCount: Int
        /// Where the media object array starts (or the record ends, without media).
        var objectsStart: Int
    }

    private static func parts(_ base: UnsafeRawPointer, _ end: Int) throws -> Parts {
        guard end >= fixedSize + 4 else {
            throw PostboxError.decoding("message record of \(end) bytes is shorter than its fixed part (\(fixedSize + 4) bytes)")
        }
        let flags = base.load(fromByteOffset: 1, as: UInt8.self)
        guard flags & ~(hasAuthor | hasMedia | listsMediaIds) == 0, flags & listsMediaIds == 0 || flags & hasMedia != 0 else {
            throw PostboxError.decoding("message record has unknown flags 0x\(String(flags, radix: 16)) at byte 1")
        }
        var p = fixedSize
        var author: Int64?
        if flags & hasAuthor != 0 {
            guard p + 8 + 4 <= end else { throw PostboxError.decoding("message record truncated in its author at byte \(p) of \(end)") }
            author = PostboxDecoder.readInt64(base, p)
            p += 8
        }
        let textLength = Int(PostboxDecoder.readInt32(base, p))
        guard textLength >= 0, textLength <= end - p - 4 else {
            throw PostboxError.decoding("message record's text length \(textLength) at byte \(p) exceeds its \(end) bytes")
        }
        let textStart = p + 4
        p = textStart + textLength
        var idCount = 0
        let idsStart = p + 4
        if flags & listsMediaIds != 0 {
            guard p + 4 <= end else { throw PostboxError.decoding("message record truncated in its media ids at byte \(p) of \(end)") }
            idCount = Int(PostboxDecoder.readInt32(base, p))
            guard idCount >= 0, idCount <= (end - idsStart) / 12 else {
                throw PostboxError.decoding("message record's media id count \(idCount) at byte \(p) exceeds its \(end) bytes")
            }
            p = idsStart + 12 * idCount
        }
        return Parts(
            flags: flags, author: author, textStart: textStart, textLength: textLength, mediaIdsStart: idsStart, mediaIdCount: idCount,
            objectsStart: p)
    }

    /// Decodes a compact record lent for the call, checking every length against the buffer
    /// before reading what it covers.
    static func decodeCompact(_ buffer: UnsafeRawBufferPointer) throws -> Message {
        let end = buffer.count
        guard let base = buffer.baseAddress else { throw PostboxError.decoding("message record of 0 bytes") }
        let parts = try parts(base, end)
        let text = String(decoding: UnsafeRawBufferPointer(start: base + parts.textStart, count: parts.textLength), as: UTF8.self)
        var p = parts.objectsStart
        var media: [any Media] = []
        if parts.flags & hasMedia != 0 {
            (media, p) = try PostboxDecoder.objectArray(borrowing: base, at: p, end: end, as: (any Media).self)
        }
        guard p == end else { throw PostboxError.decoding("message record has \(end - p) bytes after its last part (byte \(p) of \(end))") }
        return Message(
            id: MessageId(
                peerId: PeerId(PostboxDecoder.readInt64(base, 2)), namespace: PostboxDecoder.readInt32(base, 10),
                id: PostboxDecoder.readInt32(base, 14)),
            timestamp: PostboxDecoder.readInt32(base, 18), authorId: parts.author.map(PeerId.init), text: text, media: media)
    }

    /// The message's id, time and media ids, read without decoding its text or media objects
    /// (the record's structure is still checked to its end); nil for a row that does not list
    /// its media ids (a legacy row, or one converted with media of an unknown type), which must
    /// be decoded whole.
    static func indexEntries(_ buffer: UnsafeRawBufferPointer) throws -> (index: MessageIndex, mediaIds: [MediaId])? {
        guard isCompact(buffer), let base = buffer.baseAddress else { return nil }
        let end = buffer.count
        let parts = try parts(base, end)
        guard parts.flags & hasMedia == 0 || parts.flags & listsMediaIds != 0 else { return nil }
        var p = parts.objectsStart
        var ids: [MediaId] = []
        if parts.flags & hasMedia != 0 {
            guard let size = PostboxDecoder.objectArraySize(borrowing: base, at: p, end: end) else {
                throw PostboxError.decoding("object array at byte \(p) runs past the record's \(end) bytes")
            }
            p += size
            ids.reserveCapacity(parts.mediaIdCount)
            for i in 0..<parts.mediaIdCount {
                let o = parts.mediaIdsStart + 12 * i
                ids.append(MediaId(namespace: PostboxDecoder.readInt32(base, o), id: PostboxDecoder.readInt64(base, o + 4)))
            }
        }
        guard p == end else { throw PostboxError.decoding("message record has \(end - p) bytes after its last part (byte \(p) of \(end))") }
        let index = MessageIndex(
            id: MessageId(
                peerId: PeerId(PostboxDecoder.readInt64(base, 2)), namespace: PostboxDecoder.readInt32(base, 10),
                id: PostboxDecoder.readInt32(base, 14)),
            timestamp: PostboxDecoder.readInt32(base, 18))
        return (index, ids)
    }

    /// Rewrites a legacy `Message` root record in the compact layout (after `encoder.reset()`),
    /// copying the media array's bytes as they are: media of types this process has not
    /// registered survive the rewrite (the media ids are listed only when every object decodes
    /// here). Fields are taken as `Message.init(decoder:)` takes them (`Message.LegacyFields`;
    /// missing ones default). Throws, writing nothing useful,
    /// for a record that does not decode as a `Message`.
    static func convertLegacy(_ buffer: UnsafeRawBufferPointer, into encoder: PostboxEncoder) throws {
        let (base, length) = try PostboxDecoder.rootHeader(buffer, expecting: Message.postboxTypeHash, Message.self)
        let decoder = PostboxDecoder()
        decoder.reset(borrowing: base, start: 8, end: 8 + length)
        let fields = try Message.LegacyFields(decoder)
        let text = fields.text.flatMap { decoder.payload(at: $0, type: .string) }
        let media = fields.media.flatMap { decoder.payload(at: $0, type: .objectArray) }
        try decoder.finishRow()
        let mediaCount = media.map { Int(PostboxDecoder.readInt32($0.baseAddress!, 0)) } ?? 0
        // The ids are listed only when every media object decodes here (its type registered).
        var mediaIds: [MediaId]?
        if mediaCount > 0, let media, let start = media.baseAddress {
            let (objects, _) = try PostboxDecoder.objectArray(borrowing: start, at: 0, end: media.count, as: (any Media).self)
            if objects.count == mediaCount { mediaIds = objects.compactMap(\.id) }
        }
        var flags: UInt8 = fields.author != nil ? hasAuthor : 0
        if mediaCount > 0 { flags |= hasMedia | (mediaIds != nil ? listsMediaIds : 0) }
        encoder.appendByte(compactTag)
        encoder.appendByte(flags)
        encoder.appendInt64(fields.peer ?? 0)
        encoder.appendInt32(fields.namespace ?? 0)
        encoder.appendInt32(fields.id ?? 0)
        encoder.appendInt32(fields.timestamp ?? 0)
        if let author = fields.author { encoder.appendInt64(author) }
        // A string payload is its byte count then its bytes: the compact text part exactly.
        if let text { encoder.appendRaw(text) } else { encoder.appendInt32(0) }
        if let mediaIds { appendMediaIds(mediaIds, into: encoder) }
        if mediaCount > 0, let media { encoder.appendRaw(media) }
    }

    /// Reads the message table's values in either layout, reusing one decoder for legacy rows.
    struct Reader {
        private var legacy = PostboxRowDecoder(Message.self)

        @inline(__always)
        mutating func decode(_ buffer: UnsafeRawBufferPointer) throws -> Message {
            if MessageRecord.isCompact(buffer) { return try MessageRecord.decodeCompact(buffer) }
            return try legacy.decode(buffer)
        }
    }
}
