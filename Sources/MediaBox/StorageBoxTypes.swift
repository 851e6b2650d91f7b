import Foundation
import Postbox

/// A resource's identity inside the media directory: its location and safe file name.
public struct MediaStorageKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let location: MediaStorageLocation
    public let fileName: String
    public init(location: MediaStorageLocation, fileName: String) {
        self.location = location
        self.fileName = fileName
    }
    public init(location: MediaStorageLocation, id: MediaResourceId) {
        self.init(location: location, fileName: id.safeFileName)
    }
    public static func < (a: Self, b: Self) -> Bool { (a.location.rawValue, a.fileName) < (b.location.rawValue, b.fileName) }
    public var description: String { (location.directoryName.map { $0 + "/" } ?? "") + fileName }
}

/// One StorageBox row: which resource, whose, what kind, how big, when last used.
public struct StorageBoxEntry: Sendable, Equatable {
    /// The raw resource id (for reports; may be the file name for re-indexed orphans).
    public var resourceId: String
    public var fileName: String
    public var info: MediaResourceStorageInfo
    public var size: Int64
    /// Last access, Unix seconds.
    public var accessTime: Int64
    /// When the data was stored, Unix seconds.
    public var storedTime: Int64

    public init(resourceId: String, fileName: String, info: MediaResourceStorageInfo, size: Int64, accessTime: Int64, storedTime: Int64) {
        self.resourceId = resourceId
        self.fileName = fileName
        self.info = info
        self.size = size
        self.accessTime = accessTime
        self.storedTime = storedTime
    }

    public init(id: MediaResourceId, info: MediaResourceStorageInfo, size: Int64, accessTime: Int64, storedTime: Int64? = nil) {
        self.init(
            resourceId: id.stringRepresentation, fileName: id.safeFileName, info: info, size: size,
            accessTime: accessTime, storedTime: storedTime ?? accessTime)
    }

    public var key: MediaStorageKey { MediaStorageKey(location: info.location, fileName: fileName) }
}

/// A row of the last-access index, as victim selection sees it (no second lookup needed).
public struct StorageBoxLRURow: Sendable {
    /// Resume point for the next chunk of a scan.
    public let cursor: ValueBoxKey
    public let accessTime: Int64
    public let key: MediaStorageKey
    public let size: Int64
    public let peerId: PeerId
    public let contentType: MediaContentType
    public let peerClass: PeerStorageClass?
}

/// Bytes and file count.
public struct StorageUsage: Sendable, Equatable, Codable {
    public var bytes: Int64
    public var count: Int64
    public init(bytes: Int64 = 0, count: Int64 = 0) {
        self.bytes = bytes
        self.count = count
    }
    public static func + (a: Self, b: Self) -> Self { StorageUsage(bytes: a.bytes + b.bytes, count: a.count + b.count) }
    public static func - (a: Self, b: Self) -> Self { StorageUsage(bytes: a.bytes - b.bytes, count: a.count - b.count) }
    public static func += (a: inout Self, b: Self) { a = a + b }
    public static func -= (a: inout Self, b: Self) { a = a - b }
}

/// A peer and a content type (the key of the finest totals).
public struct PeerContentType: Hashable, Sendable, Comparable {
    public let peerId: PeerId
    public let contentType: MediaContentType
    public init(peerId: PeerId, contentType: MediaContentType) {
        self.peerId = peerId
        self.contentType = contentType
    }
    public static func < (a: Self, b: Self) -> Bool { (a.peerId, a.contentType.rawValue) < (b.peerId, b.contentType.rawValue) }
}

/// Cache usage from StorageBox's running totals (what `jobrun stats` prints) — read without
/// walking the file system. Sizes are the complete files' sizes; partial downloads are not
/// counted until they complete.
public struct StorageStats: Sendable, Equatable {
    public var byLocation: [MediaStorageLocation: StorageUsage] = [:]
    public var byPeer: [PeerId: StorageUsage] = [:]
    public var byContentType: [MediaContentType: StorageUsage] = [:]
    public var byPeerAndContentType: [PeerContentType: StorageUsage] = [:]

    public init() {}

    public var total: StorageUsage { byLocation.values.reduce(StorageUsage(), +) }

    public var byTier: [MediaStorageTier: StorageUsage] {
        var out: [MediaStorageTier: StorageUsage] = [:]
        for (loc, u) in byLocation { out[loc.tier, default: StorageUsage()] += u }
        return out
    }
}
