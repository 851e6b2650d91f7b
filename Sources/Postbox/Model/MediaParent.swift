import Foundation

/// The entity that holds a file and can hand out a fresh file reference for it: re-fetching the
/// parent is the only way to revalidate an expired reference.
public enum MediaParent: Hashable, Sendable, CustomStringConvertible {
    case message(MessageId)
    case peerAvatar(PeerId)
    case stickerSet(id: Int64)
    case wallpaper(id: Int64)
    case story(peerId: PeerId, id: Int32)

    public enum Kind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case message = 1, peerAvatar = 2, stickerSet = 3, wallpaper = 4, story = 5
        public var description: String {
            switch self {
            case .message: return "message"
            case .peerAvatar: return "avatar"
            case .stickerSet: return "sticker_set"
            case .wallpaper: return "wallpaper"
            case .story: return "story"
            }
        }
    }

    public var kind: Kind {
        switch self {
        case .message: return .message
        case .peerAvatar: return .peerAvatar
        case .stickerSet: return .stickerSet
        case .wallpaper: return .wallpaper
        case .story: return .story
        }
    }

    /// A fixed-length key per kind (kind byte first), so `key + resourceId` indexes can be
    /// range-scanned by parent.
    public var key: ValueBoxKey {
        switch self {
        case let .message(id):
            var k = ValueBoxKey(length: 17)
            k.setUInt8(0, value: Kind.message.rawValue)
            k.setInt64(1, value: id.peerId.rawValue)
            k.setInt32(9, value: id.namespace)
            k.setInt32(13, value: id.id)
            return k
        case let .peerAvatar(peer):
            var k = ValueBoxKey(length: 9)
            k.setUInt8(0, value: Kind.peerAvatar.rawValue)
            k.setInt64(1, value: peer.rawValue)
            return k
        case let .stickerSet(id), let .wallpaper(id):
            var k = ValueBoxKey(length: 9)
            k.setUInt8(0, value: kind.rawValue)
            k.setInt64(1, value: id)
            return k
        case let .story(peer, id):
            var k = ValueBoxKey(length: 13)
            k.setUInt8(0, value: Kind.story.rawValue)
            k.setInt64(1, value: peer.rawValue)
            k.setInt32(9, value: id)
            return k
        }
    }

    /// Parses a key made by `key` (from its start); nil if it is not one.
    public init?(key: ValueBoxKey) {
        guard key.length >= 9, let kind = Kind(rawValue: key.getUInt8(0)) else { return nil }
        switch kind {
        case .message:
            guard key.length >= 17 else { return nil }
            self = .message(MessageId(peerId: PeerId(key.getInt64(1)), namespace: key.getInt32(9), id: key.getInt32(13)))
        case .peerAvatar: self = .peerAvatar(PeerId(key.getInt64(1)))
        case .stickerSet: self = .stickerSet(id: key.getInt64(1))
        case .wallpaper: self = .wallpaper(id: key.getInt64(1))
        case .story:
            guard key.length >= 13 else { return nil }
            self = .story(peerId: PeerId(key.getInt64(1)), id: key.getInt32(9))
        }
    }

    /// Length of `key` for a parent of this kind.
    public static func keyLength(of kind: Kind) -> Int {
        switch kind {
        case .message: return 17
        case .story: return 13
        case .peerAvatar, .stickerSet, .wallpaper: return 9
        }
    }

    public var description: String {
        switch self {
        case let .message(id): return "message:\(id)"
        case let .peerAvatar(peer): return "avatar:\(peer)"
        case let .stickerSet(id): return "sticker_set:\(id)"
        case let .wallpaper(id): return "wallpaper:\(id)"
        case let .story(peer, id): return "story:\(peer):\(id)"
        }
    }
}
