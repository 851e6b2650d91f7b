import MediaBox
import Postbox

// The words job files use for the enums parameters name. Each list comes from the enum's cases,
// so a new case is a new word, and nothing else repeats the list.

/// `private`, `group`, `channel`: the coarse peer classes of cache settings and history sync.
extension PeerStorageClass: ParamWord {
    public var word: String { description }
}

/// `photo`, `video`, `file`, `voice`, `sticker`, `avatar`, `other`.
extension MediaContentType: ParamWord {
    public var word: String { description }

    /// The types a message or chat carries (all but `other`): what prefetch can download.
    public static let downloadable = allCases.filter { $0 != .other }
}

/// `general`, `short-lived`: the keep tiers of the media cache.
extension MediaStorageTier: ParamWord {
    public var word: String { description }
}

/// `message`, `avatar`, `stickerSet`, `wallpaper`, `story`: the entities a file reference is
/// refreshed through.
extension MediaParent.Kind: ParamWord {
    public var word: String {
        switch self {
        case .message: return "message"
        case .peerAvatar: return "avatar"
        case .stickerSet: return "stickerSet"
        case .wallpaper: return "wallpaper"
        case .story: return "story"
        }
    }
}
