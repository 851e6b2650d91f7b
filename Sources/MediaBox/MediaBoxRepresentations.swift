import Foundation
import Postbox

/// Derived representations as cache entries of their own.
///
/// A representation is stored like any resource, under the id `<resource id>:<representation id>`
/// in the folder of its keep duration: `cache/` for `general`, `short-cache/` for `shortLived`.
/// Each has its own StorageBox row, so it is counted in its tier's totals (`stats`), expires by
/// its tier's TTL and is evicted by its own last access.
///
/// A representation outlives its resource: evicting or expiring a resource leaves its
/// representations alone, and each goes when its own keep duration says so. That is the point of
/// a thumbnail or a blurred placeholder: it is what a client draws while the resource is not in
/// the cache. (Telegram-iOS keeps `cache/` and `short-cache/` the same way.)
extension MediaBox {
    /// The id a representation is stored under.
    public static func representationId(of resource: MediaResourceId, _ representation: any MediaRepresentation) -> MediaResourceId {
        MediaResourceId(resource.stringRepresentation + ":" + representation.uniqueId)
    }

    /// The folder a representation lives in: its keep duration's.
    public static func location(of representation: any MediaRepresentation) -> MediaStorageLocation {
        representation.keepDuration == .shortLived ? .shortCache : .cache
    }

    /// The stored representation, or nil. Changes nothing.
    public func cachedRepresentation(of resource: MediaResourceId, _ representation: any MediaRepresentation) -> MediaResourceData? {
        let data = resourceData(Self.representationId(of: resource, representation), location: Self.location(of: representation))
        return data?.complete == true ? data : nil
    }

    /// The representation of a complete resource: the stored one (its access recorded), or one
    /// made now by `generator` from the resource (held open under a shared lock, so cleanup
    /// cannot remove it meanwhile) and stored with `info`'s peer and content type.
    ///
    /// A crash at any point leaves either no representation or a complete one: the bytes are
    /// written under no name, synced and linked whole (`store`); a complete file whose row was
    /// not written yet gets its row here, the next time it is asked for.
    public func representation(
        of resource: MediaResourceId, _ representation: any MediaRepresentation, info: MediaResourceStorageInfo,
        generator: any MediaRepresentationGenerator
    ) async throws -> (data: MediaResourceData, generated: Bool) {
        let id = Self.representationId(of: resource, representation)
        var info = info
        info.location = Self.location(of: representation)
        let key = MediaStorageKey(location: info.location, id: id)
        if let existing = cachedRepresentation(of: resource, representation) {
            if try storageBox.entry(key) == nil {
                try storageBox.insert(StorageBoxEntry(id: id, info: info, size: existing.size, accessTime: Self.currentTime()))
            } else {
                try storageBox.touch([key], at: Self.currentTime())
            }
            return (existing, false)
        }
        // Making a representation is not a use of the resource: its access time stays.
        guard let reader = try openForReading(resource, touch: false) else {
            throw MediaRepresentationError.resourceNotComplete(id: resource.stringRepresentation)
        }
        defer { reader.close() }
        let bytes = try await generator.generate(representation, from: reader.data)
        guard !bytes.isEmpty else {
            throw MediaRepresentationError.emptyRepresentation(id: resource.stringRepresentation, representation: representation.uniqueId)
        }
        return (try store(bytes, id: id, info: info), true)
    }

    static func currentTime() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
