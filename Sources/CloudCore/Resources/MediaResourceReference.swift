import CloudProtocol
import Foundation
import Postbox

/// Why a resource is being fetched: the parent entity it came from (Telegram-iOS's
/// `MediaResourceReference`). A fresh file reference comes only from re-fetching this parent, so
/// it travels with every fetch and with `MultipartFetchError.fileReferenceExpired`.
///
/// Maps one-to-one onto Postbox's `MediaParent` (what the media-reference table stores) and onto
/// the protocol's `ParentEntity` (the key the server counts revalidations by).
public enum MediaResourceReference: Sendable, Hashable, CustomStringConvertible {
    /// Media of a message (`messages.getMessages`).
    case message(MessageId)
    /// A peer's avatar (`photos.getPeerPhoto`).
    case avatar(PeerId)
    /// A sticker set's thumbnail or stickers (`messages.getStickerSet`).
    case stickerPack(id: Int64)
    /// A wallpaper document (`account.getWallPaper`).
    case wallpaper(id: Int64)
    /// A story's media (`stories.getStoryById`).
    case story(peerId: PeerId, id: Int32)
    /// No parent: secret-chat files (keys in hand, no reference) and plain URLs.
    case standalone

    /// From Postbox's parent.
    public init(_ parent: MediaParent) {
        switch parent {
        case .message(let id): self = .message(id)
        case .peerAvatar(let peer): self = .avatar(peer)
        case .stickerSet(let id): self = .stickerPack(id: id)
        case .wallpaper(let id): self = .wallpaper(id: id)
        case .story(let peer, let id): self = .story(peerId: peer, id: id)
        }
    }

    /// From the protocol's parent entity.
    public init(_ parent: ParentEntity) {
        switch parent {
        case .message(let peer, let id): self = .message(MessageId(peerId: PeerId(peer), id: id))
        case .peerAvatar(let peer): self = .avatar(PeerId(peer))
        case .stickerSet(let id): self = .stickerPack(id: id)
        case .wallpaper(let id): self = .wallpaper(id: id)
        case .story(let peer, let id): self = .story(peerId: PeerId(peer), id: id)
        }
    }

    /// Postbox's form; nil for `standalone`.
    public var mediaParent: MediaParent? {
        switch self {
        case .message(let id): return .message(id)
        case .avatar(let peer): return .peerAvatar(peer)
        case .stickerPack(let id): return .stickerSet(id: id)
        case .wallpaper(let id): return .wallpaper(id: id)
        case .story(let peer, let id): return .story(peerId: peer, id: id)
        case .standalone: return nil
        }
    }

    /// The protocol's form (`message:<peer>:<id>`, …); nil for `standalone`.
    public var parentEntity: ParentEntity? {
        switch self {
        case .message(let id): return .message(peerId: id.peerId.rawValue, messageId: id.id)
        case .avatar(let peer): return .peerAvatar(peerId: peer.rawValue)
        case .stickerPack(let id): return .stickerSet(id: id)
        case .wallpaper(let id): return .wallpaper(id: id)
        case .story(let peer, let id): return .story(peerId: peer.rawValue, storyId: id)
        case .standalone: return nil
        }
    }

    public var description: String { parentEntity?.key ?? "standalone" }
}
