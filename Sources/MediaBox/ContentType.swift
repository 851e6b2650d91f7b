import Foundation
import Postbox

/// What a cached resource is, as far as storage accounting and cleanup policy care.
/// Shared by CloudCore (which knows the media), StorageBox (totals) and cleanup (TTL overrides).
/// The raw values are stored on disk in StorageBox: never renumber.
public enum MediaContentType: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case photo = 0
    case video = 1
    case file = 2
    case voice = 3
    case sticker = 4
    case avatar = 5
    case other = 6

    public var description: String {
        switch self {
        case .photo: return "photo"
        case .video: return "video"
        case .file: return "file"
        case .voice: return "voice"
        case .sticker: return "sticker"
        case .avatar: return "avatar"
        case .other: return "other"
        }
    }

    /// Parses the names used in job files and reports (`photo`, `video`, …).
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = match
    }
}

/// The coarse peer class cache settings use (as in the clients' storage settings):
/// private chats (incl. contacts and secret chats), groups, channels.
public enum PeerStorageClass: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case privateChats = 0
    case groups = 1
    case channels = 2

    public init(_ category: PeerCategory) {
        switch category {
        case .contact, .privateChat, .secretChat: self = .privateChats
        case .group: self = .groups
        case .channel: self = .channels
        }
    }

    /// `private`, `group`, `channel` — the same words as `PeerCategory.storageClass`.
    public var description: String {
        switch self {
        case .privateChats: return "private"
        case .groups: return "group"
        case .channels: return "channel"
        }
    }

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = match
    }
}
