/// A message in a peer's history. Ids grow with time per peer (1, 2, 3 …).
///
/// `media` is usually empty or one item; the dataset also has messages with many items (e.g. a
/// 100-resource message for revalidation tests). All file references in a message share the
/// parent entity `message:<peerId>:<id>`.
public struct Message: Codable, Hashable, Sendable {
    public var id: Int32
    public var peerId: Int64
    /// Unix seconds.
    public var date: Int64
    /// The sender (a user id) or `nil` for channel posts.
    public var fromId: Int64?
    public var text: String
    public var media: [MessageMedia]
    /// The client's random id when the message came from `messages.sendMedia`.
    public var randomId: Int64?

    public init(id: Int32, peerId: Int64, date: Int64, fromId: Int64? = nil, text: String, media: [MessageMedia] = [], randomId: Int64? = nil) {
        self.id = id
        self.peerId = peerId
        self.date = date
        self.fromId = fromId
        self.text = text
        self.media = media
        self.randomId = randomId
    }

    /// The parent entity of this message's file references.
    public var parent: ParentEntity { .message(peerId: peerId, messageId: id) }
}
