/// `POST /api/messages.getDialogs`: the chat list, most recent top message first
/// (ties by peer id ascending), paged by position.
public struct GetDialogsRequest: Codable, Hashable, Sendable {
    /// Index of the first dialog to return (0 = newest).
    public var offset: Int
    /// 1…100.
    public var limit: Int

    public init(offset: Int = 0, limit: Int = 100) {
        self.offset = offset
        self.limit = limit
    }

    /// Missing fields take their defaults (`offset` 0, `limit` 100).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        offset = try c.decodeIfPresent(Int.self, forKey: .offset) ?? 0
        limit = try c.decodeIfPresent(Int.self, forKey: .limit) ?? 100
    }
}

/// One chat in the chat list.
public struct Dialog: Codable, Hashable, Sendable {
    public var peer: Peer
    public var topMessageId: Int32
    public var topMessageDate: Int64
    /// Number of messages in the history.
    public var messageCount: Int

    public init(peer: Peer, topMessageId: Int32, topMessageDate: Int64, messageCount: Int) {
        self.peer = peer
        self.topMessageId = topMessageId
        self.topMessageDate = topMessageDate
        self.messageCount = messageCount
    }
}

/// Answer of `messages.getDialogs`.
public struct GetDialogsResponse: Codable, Hashable, Sendable {
    public var dialogs: [Dialog]
    /// Total number of dialogs.
    public var count: Int
    /// Offset of the next page, `nil` on the last page.
    public var nextOffset: Int?

    public init(dialogs: [Dialog], count: Int, nextOffset: Int?) {
        self.dialogs = dialogs
        self.count = count
        self.nextOffset = nextOffset
    }
}

/// `POST /api/messages.getHistory`: messages of one peer, newest first, with
/// `minId < id < offsetId` (`offsetId` 0 = no upper bound), at most `limit` (1…100).
/// Page backwards by passing the smallest id received as the next `offsetId`; sync incrementally
/// by passing the newest id already stored as `minId`.
public struct GetHistoryRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public var offsetId: Int32
    public var minId: Int32
    public var limit: Int

    public init(peerId: Int64, offsetId: Int32 = 0, minId: Int32 = 0, limit: Int = 100) {
        self.peerId = peerId
        self.offsetId = offsetId
        self.minId = minId
        self.limit = limit
    }

    /// Missing fields take their defaults (`offsetId` 0, `minId` 0, `limit` 100).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        peerId = try c.decode(Int64.self, forKey: .peerId)
        offsetId = try c.decodeIfPresent(Int32.self, forKey: .offsetId) ?? 0
        minId = try c.decodeIfPresent(Int32.self, forKey: .minId) ?? 0
        limit = try c.decodeIfPresent(Int.self, forKey: .limit) ?? 100
    }
}

/// Answer of `messages.getHistory` and `messages.getMessages`.
public struct MessagesResponse: Codable, Hashable, Sendable {
    /// Newest first for history; in request order for getMessages (missing ids left out).
    public var messages: [Message]
    /// Total messages in the peer's history.
    public var count: Int
    /// The peer, with a fresh avatar reference.
    public var peer: Peer?

    public init(messages: [Message], count: Int, peer: Peer? = nil) {
        self.messages = messages
        self.count = count
        self.peer = peer
    }
}

/// `POST /api/messages.getMessages`: up to 100 messages of one peer by id. Deleted or unknown
/// ids are simply absent from the answer; more than 100 ids answer `LIMIT_INVALID`.
/// Every returned message carries fresh file references.
public struct GetMessagesRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public var ids: [Int32]

    public init(peerId: Int64, ids: [Int32]) {
        self.peerId = peerId
        self.ids = ids
    }

    public static let maxIds = 100
}
