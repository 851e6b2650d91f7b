import Foundation

/// The message table's values: a versioned binary layout that names no field, decoded in one
/// pass straight from the store's buffer (a range scan decodes millions of them).
///
/// Layout, version 1 (integers little-endian):
///
/// | bytes | content |
/// |---|---|
/// | 1 | `compactTag` (0x01): the layout's version |
/// | 1 | flags: bit 0 an author follows, bit 1 media follow; other bits must be zero |
/// | 8 | peer id |
/// | 4 | namespace |
/// | 4 | id |
/// | 4 | timestamp |
/// | 8 | author peer id (only with flag bit 0) |
/// | 4 + n | text: UTF-8 byte count, then the bytes |
/// | … | media (only with flag bit 1): an object array as `PostboxEncoder` writes one (count, then per object its type hash, length and fields), so media types stay polymorphic and self-describing |
///
/// The record ends exactly where its last part ends. Rows written before this layout hold a
/// `Message` root record (its type hash first, whose low byte is never `compactTag`): they are
/// still read, and `Postbox` rewrites them in the background of opening
/// (`MessageRecordConversion`). A row that is neither is refused with an error naming what is
/// wrong and where.
enum MessageRecord {
    static let compactTag: UInt8 = 0x01
    static let hasAuthor: UInt8 = 1 << 0
    static let hasMedia: UInt8 = 1 << 1
    /// Tag, flags, peer, namespace, id, timestamp.
    static let fixedSize = 22

    /// Writes `message` in the compact layout (after `encoder.reset()`).
    static func encode(_ message: Message, into encoder: PostboxEncoder) {
        var flags: UInt8 = 0
        if message.authorId != nil { flags |= hasAuthor }
        if !message.media.isEmpty { flags |= hasMedia }
        encoder.appendByte(compactTag)
        encoder.appendByte(flags)
        encoder.appendInt64(message.index.id.peerId.rawValue)
        encoder.appendInt32(message.index.id.namespace)
        encoder.appendInt32(message.index.id.id)
        encoder.appendInt32(message.index.timestamp)
        if let author = message.authorId { encoder.appendInt64(author.rawValue) }
        encoder.appendLengthPrefixed(message.text)
        if !message.media.isEmpty { encoder.appendObjectArrayPayload(message.media) }
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

    /// Decodes a compact record lent for the call, checking every length against the buffer
    /// before reading what it covers.
    static func decodeCompact(_ buffer: UnsafeRawBufferPointer) throws -> Message {
        let end = buffer.count
        guard end >= fixedSize + 4, let base = buffer.baseAddress else {
            throw PostboxError.decoding("message record of \(end) bytes is shorter than its fixed part (\(fixedSize + 4) bytes)")
        }
        let flags = base.load(fromByteOffset: 1, as: UInt8.self)
        guard flags & ~(hasAuthor | hasMedia) == 0 else {
            throw PostboxError.decoding("message record has unknown flags 0x\(String(flags, radix: 16)) at byte 1")
        }
        let peer = PostboxDecoder.readInt64(base, 2)
        let namespace = PostboxDecoder.readInt32(base, 10)
        let id = PostboxDecoder.readInt32(base, 14)
        let timestamp = PostboxDecoder.readInt32(base, 18)
        var p = fixedSize
        var author: PeerId?
        if flags & hasAuthor != 0 {
            guard p + 8 + 4 <= end else { throw PostboxError.decoding("message record truncated in its author at byte \(p) of \(end)") }
            author = PeerId(PostboxDecoder.readInt64(base, p))
            p += 8
        }
        let textLength = Int(PostboxDecoder.readInt32(base, p))
        guard textLength >= 0, textLength <= end - p - 4 else {
            throw PostboxError.decoding("message record's text length \(textLength) at byte \(p) exceeds its \(end) bytes")
        }
        let text = String(decoding: UnsafeRawBufferPointer(start: base + p + 4, count: textLength), as: UTF8.self)
        p += 4 + textLength
        var media: [any Media] = []
        if flags & hasMedia != 0 {
            (media, p) = try PostboxDecoder.objectArray(borrowing: base, at: p, end: end, as: (any Media).self)
        }
        guard p == end else { throw PostboxError.decoding("message record has \(end - p) bytes after its last part (byte \(p) of \(end))") }
        return Message(
            id: MessageId(peerId: PeerId(peer), namespace: namespace, id: id), timestamp: timestamp, authorId: author, text: text, media: media)
    }

    /// Rewrites a legacy `Message` root record in the compact layout (after `encoder.reset()`),
    /// copying the media array's bytes as they are: media of types this process has not
    /// registered survive the rewrite. Fields are taken as `Message.init(decoder:)` takes them
    /// (the first of each name and type; missing ones default). Throws, writing nothing useful,
    /// for a record that does not decode as a `Message`.
    static func convertLegacy(_ buffer: UnsafeRawBufferPointer, into encoder: PostboxEncoder) throws {
        let (base, length) = try PostboxDecoder.rootHeader(buffer, expecting: Message.postboxTypeHash, Message.self)
        let decoder = PostboxDecoder()
        decoder.reset(borrowing: base, start: 8, end: 8 + length)
        var peer: Int64?, namespace: Int32?, id: Int32?, timestamp: Int32?, author: Int64?
        var text: UnsafeRawBufferPointer?, media: UnsafeRawBufferPointer?
        try decoder.forEachField { word, offset in
            switch word {
            case Message.fieldP: if peer == nil { peer = decoder.int64(at: offset) }
            case Message.fieldN: if namespace == nil { namespace = decoder.int32(at: offset) }
            case Message.fieldI: if id == nil { id = decoder.int32(at: offset) }
            case Message.fieldTs: if timestamp == nil { timestamp = decoder.int32(at: offset) }
            case Message.fieldA: if author == nil { author = decoder.int64(at: offset) }
            case Message.fieldT: if text == nil { text = decoder.payload(at: offset, type: .string) }
            case Message.fieldM: if media == nil { media = decoder.payload(at: offset, type: .objectArray) }
            default: break
            }
        }
        try decoder.finishRow()
        let mediaCount = media.map { Int(PostboxDecoder.readInt32($0.baseAddress!, 0)) } ?? 0
        encoder.appendByte(compactTag)
        encoder.appendByte((author != nil ? hasAuthor : 0) | (mediaCount > 0 ? hasMedia : 0))
        encoder.appendInt64(peer ?? 0)
        encoder.appendInt32(namespace ?? 0)
        encoder.appendInt32(id ?? 0)
        encoder.appendInt32(timestamp ?? 0)
        if let author { encoder.appendInt64(author) }
        // A string payload is its byte count then its bytes: the compact text part exactly.
        if let text { encoder.appendRaw(text) } else { encoder.appendInt32(0) }
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
