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

    public init(decoder: PostboxDecoder) throws {
        let peer = PeerId(decoder.decodeInt64(forKey: "p") ?? 0)
        let id = MessageId(peerId: peer, namespace: decoder.decodeInt32(forKey: "n") ?? 0, id: decoder.decodeInt32(forKey: "i") ?? 0)
        index = MessageIndex(id: id, timestamp: decoder.decodeInt32(forKey: "ts") ?? 0)
        authorId = decoder.decodeInt64(forKey: "a").map(PeerId.init)
        text = decoder.decodeString(forKey: "t") ?? ""
        media = try decoder.decodeObjectArray(forKey: "m").compactMap { $0 as? any Media }
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
