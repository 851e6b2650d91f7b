import Foundation

/// What kind of chat a peer is: drives prefetch policy and cleanup categories.
public enum PeerCategory: Int32, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// A user in the contact list.
    case contact = 0
    /// A user not in the contact list.
    case privateChat = 1
    case group = 2
    case channel = 3
    case secretChat = 4

    /// The coarse class used by cache settings: private, group or channel.
    public var storageClass: String {
        switch self {
        case .contact, .privateChat, .secretChat: return "private"
        case .group: return "group"
        case .channel: return "channel"
        }
    }

    public var description: String {
        switch self {
        case .contact: return "contact"
        case .privateChat: return "private"
        case .group: return "group"
        case .channel: return "channel"
        case .secretChat: return "secret"
        }
    }
}

/// A peer as stored in Postbox.
public struct Peer: PostboxCoding, Sendable {
    public var id: PeerId
    public var category: PeerCategory
    public var title: String
    public var username: String?
    /// The current avatar, if any (its resources are revalidated through the peer).
    public var photo: (any Media)?

    public init(id: PeerId, category: PeerCategory, title: String, username: String? = nil, photo: (any Media)? = nil) {
        self.id = id
        self.category = category
        self.title = title
        self.username = username
        self.photo = photo
    }

    public init(decoder: PostboxDecoder) throws {
        id = PeerId(decoder.decodeInt64(forKey: "i") ?? 0)
        category = PeerCategory(rawValue: decoder.decodeInt32(forKey: "c") ?? 1) ?? .privateChat
        title = decoder.decodeString(forKey: "t") ?? ""
        username = decoder.decodeString(forKey: "u")
        photo = try decoder.decodeObject(forKey: "p") as? any Media
    }

    public func encode(_ encoder: PostboxEncoder) {
        encoder.encode(id.rawValue, forKey: "i")
        encoder.encode(category.rawValue, forKey: "c")
        encoder.encode(title, forKey: "t")
        encoder.encodeIfPresent(username, forKey: "u")
        encoder.encodeIfPresent(photo, forKey: "p")
    }
}
