/// The entity a file reference was issued for; re-fetching it is the only way to a fresh
/// reference (as `MediaResourceReference` in the seed). Also the key of per-parent counters.
public enum ParentEntity: Hashable, Sendable, CustomStringConvertible {
    case message(peerId: Int64, messageId: Int32)
    case peerAvatar(peerId: Int64)
    case stickerSet(id: Int64)
    case wallpaper(id: Int64)
    case story(peerId: Int64, storyId: Int32)

    /// Stable string form, used in admin counters and admin expiry:
    /// `message:<peer>:<id>`, `avatar:<peer>`, `stickerset:<id>`, `wallpaper:<id>`, `story:<peer>:<id>`.
    public var key: String {
        switch self {
        case .message(let p, let m): return "message:\(p):\(m)"
        case .peerAvatar(let p): return "avatar:\(p)"
        case .stickerSet(let id): return "stickerset:\(id)"
        case .wallpaper(let id): return "wallpaper:\(id)"
        case .story(let p, let s): return "story:\(p):\(s)"
        }
    }

    /// Parses `key` back; `nil` for anything else.
    public init?(key: String) {
        let parts = key.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        switch (parts.first, parts.count) {
        case ("message", 3):
            guard let p = Int64(parts[1]), let m = Int32(parts[2]) else { return nil }
            self = .message(peerId: p, messageId: m)
        case ("avatar", 2):
            guard let p = Int64(parts[1]) else { return nil }
            self = .peerAvatar(peerId: p)
        case ("stickerset", 2):
            guard let id = Int64(parts[1]) else { return nil }
            self = .stickerSet(id: id)
        case ("wallpaper", 2):
            guard let id = Int64(parts[1]) else { return nil }
            self = .wallpaper(id: id)
        case ("story", 3):
            guard let p = Int64(parts[1]), let s = Int32(parts[2]) else { return nil }
            self = .story(peerId: p, storyId: s)
        default:
            return nil
        }
    }

    public var description: String { key }
}

extension ParentEntity: Codable {
    /// Encoded as its `key` string.
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let v = ParentEntity(key: s) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "bad parent entity key \(s)")
        }
        self = v
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(key)
    }
}
