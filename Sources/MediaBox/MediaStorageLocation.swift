import Foundation

/// Where a resource's file lives under the media directory, which also fixes its keep tier:
/// original resources in the media directory itself, cached representations in `cache/`
/// (general tier) or `short-cache/` (short-lived tier). Raw values are on disk: never renumber.
public enum MediaStorageLocation: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `media/<id>`: downloaded resources (general tier).
    case resources = 0
    /// `media/cache/<id>`: cached representations kept for the general TTL.
    case cache = 1
    /// `media/short-cache/<id>`: cached representations kept for the short-lived TTL.
    case shortCache = 2

    /// The subdirectory of the media directory, or nil for the media directory itself.
    public var directoryName: String? {
        switch self {
        case .resources: return nil
        case .cache: return "cache"
        case .shortCache: return "short-cache"
        }
    }

    public var tier: MediaStorageTier { self == .shortCache ? .shortLived : .general }

    public var description: String {
        switch self {
        case .resources: return "resources"
        case .cache: return "cache"
        case .shortCache: return "short-cache"
        }
    }

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = match
    }
}

/// Keep duration class (Telegram-iOS's `CachedMediaRepresentationKeepDuration`): each has its own TTL.
public enum MediaStorageTier: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case general = 0
    case shortLived = 1
    public var description: String { self == .general ? "general" : "short-lived" }
}
