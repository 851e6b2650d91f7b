import Foundation

/// A message as stored in Postbox: its index (peer, namespace, time, id), text and media.
public struct Message: PostboxCoding, Sendable {
    public var index: MessageIndex
    public var authorId: PeerId?
    public var text: String
    public var media: [any Media]

    public var id: MessageId { index.id }
    public var timestamp: Int32 { index.timestamp }

    public init(id: MessageId, timestamp: Int32, authorId: PeerId? = nil, text: String = "", media: [any Media] = []) {
        self.index = MessageIndex(id: id, timestamp: timestamp)
        self.authorId = authorId
        self.text = text
        self.media = media
    }

    /// Identity words of the fields (`PostboxDecoder.fieldWord(name, type)`: type, name length,
    /// name bytes), as literals so that decoding compares constants; checked by a test.
    static let fieldP: UInt64 = 0x70_01_01  // "p", Int64
    static let fieldN: UInt64 = 0x6e_01_00  // "n", Int32
    static let fieldI: UInt64 = 0x69_01_00  // "i", Int32
    static let fieldTs: UInt64 = 0x73_74_02_00  // "ts", Int32
    static let fieldA: UInt64 = 0x61_01_01  // "a", Int64
    static let fieldT: UInt64 = 0x74_01_04  // "t", String
    static let fieldM: UInt64 = 0x6d_01_08  // "m", [Object]

    public init(decoder: PostboxDecoder) throws {
        let fields = try LegacyFields(decoder)
        let text = fields.text.map { decoder.string(at: $0) }
        let media = try fields.media.map { try decoder.objectArray(at: $0, of: (any Media).self) }
        self.init(
            id: MessageId(peerId: PeerId(fields.peer ?? 0), namespace: fields.namespace ?? 0, id: fields.id ?? 0),
            timestamp: fields.timestamp ?? 0, authorId: fields.author.map(PeerId.init), text: text ?? "", media: media ?? [])
    }

    /// The fields of a self-describing `Message` record, found in one pass (a scan decodes
    /// millions of messages) with the semantics of lookups by name: the first field of each name
    /// and type counts, others and unknown fields are ignored, missing ones are nil. Text and
    /// media are the offsets of their payloads, for the caller to decode or copy.
    struct LegacyFields {
        var peer: Int64?, namespace: Int32?, id: Int32?, timestamp: Int32?, author: Int64?
        var text: Int?, media: Int?

        init(_ decoder: PostboxDecoder) throws {
            try decoder.forEachField { word, offset in
                switch word {
                case Message.fieldP: if peer == nil { peer = decoder.int64(at: offset) }
                case Message.fieldN: if namespace == nil { namespace = decoder.int32(at: offset) }
                case Message.fieldI: if id == nil { id = decoder.int32(at: offset) }
                case Message.fieldTs: if timestamp == nil { timestamp = decoder.int32(at: offset) }
                case Message.fieldA: if author == nil { author = decoder.int64(at: offset) }
                case Message.fieldT: if text == nil { text = offset }
                case Message.fieldM: if media == nil { media = offset }
                default: break
                }
            }
        }
    }

    public func encode(_ encoder: PostboxEncoder) {
        encoder.encode(index.id.peerId.rawValue, forKey: "p")
        encoder.encode(index.id.namespace, forKey: "n")
        encoder.encode(index.id.id, forKey: "i")
        encoder.encode(index.timestamp, forKey: "ts")
        encoder.encodeIfPresent(authorId?.rawValue, forKey: "a")
        encoder.encode(text, forKey: "t")
        encoder.encodeObjectArray(media, forKey: "m")
    }
}
