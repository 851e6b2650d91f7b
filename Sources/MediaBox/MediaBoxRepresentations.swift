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
        try await representations(of: resource, [representation], info: info, generator: generator)[0]
    }

    /// Several representations of one resource (distinct ids), in their order: the stored ones
    /// and the missing ones made, as `makeRepresentations` finds and makes them, the made ones
    /// stored together, with one sync of their data, one of their names and one StorageBox
    /// transaction for their rows (`storeBatch`), under the same crash guarantees as one
    /// representation.
    public func representations(
        of resource: MediaResourceId, _ representations: [any MediaRepresentation], info: MediaResourceStorageInfo,
        generator: any MediaRepresentationGenerator
    ) async throws -> [(data: MediaResourceData, generated: Bool)] {
        let inHand = try await makeRepresentations(of: resource, representations, info: info, generator: generator)
        let made = inHand.compactMap(\.made)
        let byId = Dictionary(made.map { ($0.id, $0.info) }, uniquingKeysWith: { first, _ in first })
        let durability = storeDurability
        // The syncs block: off the cooperative pool.
        let stored = try await Self.offPool { try self.storeBatch(made.map { ($0.id, $0.bytes) }, info: { byId[$0] ?? info }, durability: durability) }
        var next = stored.makeIterator()
        return inHand.map { item in
            if let data = item.stored { return (data, false) }
            return (next.next()!, true)
        }
    }

    /// Several representations of one resource (distinct ids), in their order, found or made
    /// but not stored: a stored one is found as `representation(of:)` finds it (its access
    /// recorded, a missing row written); the missing ones are made by one call of the generator
    /// (which may read the resource once for all of them) and returned with the id and info to
    /// store them under. The caller stores them (`storeBatch` or a `BatchStore`, which group
    /// several resources' representations into one commit); until then a crash loses only them.
    public func makeRepresentations(
        of resource: MediaResourceId, _ representations: [any MediaRepresentation], info: MediaResourceStorageInfo,
        generator: any MediaRepresentationGenerator
    ) async throws -> [RepresentationInHand] {
        func entryInfo(_ representation: any MediaRepresentation) -> MediaResourceStorageInfo {
            var entry = info
            entry.location = Self.location(of: representation)
            return entry
        }
        var results: [RepresentationInHand?] = Array(repeating: nil, count: representations.count)
        var missing: [Int] = []
        var touched: [MediaStorageKey] = []
        let now = Self.currentTime()
        for (index, representation) in representations.enumerated() {
            guard let existing = cachedRepresentation(of: resource, representation) else {
                missing.append(index)
                continue
            }
            let id = Self.representationId(of: resource, representation)
            let key = MediaStorageKey(location: Self.location(of: representation), id: id)
            if try storageBox.entry(key) == nil {
                try storageBox.insert(StorageBoxEntry(id: id, info: entryInfo(representation), size: existing.size, accessTime: now))
            } else {
                touched.append(key)
            }
            results[index] = .stored(existing)
        }
        if !touched.isEmpty { try storageBox.touch(touched, at: now) }
        if !missing.isEmpty {
            // Making a representation is not a use of the resource: its access time stays.
            guard let reader = try openForReading(resource, touch: false) else {
                throw MediaRepresentationError.resourceNotComplete(id: resource.stringRepresentation)
            }
            defer { reader.close() }
            let wanted = missing.map { representations[$0] }
            let made = try await generator.generate(wanted, from: reader.data)
            if let empty = wanted.indices.first(where: { $0 >= made.count || made[$0].isEmpty }) {
                throw MediaRepresentationError.emptyRepresentation(id: resource.stringRepresentation, representation: wanted[empty].uniqueId)
            }
            for (position, index) in missing.enumerated() {
                let representation = representations[index]
                results[index] = .made(id: Self.representationId(of: resource, representation), bytes: made[position], info: entryInfo(representation))
            }
        }
        return results.map { $0! }
    }

    static func currentTime() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
