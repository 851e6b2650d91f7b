import CloudProtocol
import Foundation
import Postbox

/// What re-fetching one parent entity produced: the fresh reference record of every file it
/// still holds (keyed by resource id, with the location id of each), or `gone` when the cloud
/// says the entity no longer exists.
struct RefetchedParent: Sendable {
    var parent: MediaParent
    var gone: Bool
    var records: [MediaReferenceRecord] = []
    /// Location (file) id → resource id, to match a resource by its file when ids differ.
    var locations: [Int64: String] = [:]
    /// The fresh message or peer, to replace the stored copy (so later readers see fresh
    /// references too).
    var message: PostboxMessage?
    var peer: PostboxPeer?

    static func gone(_ parent: MediaParent) -> RefetchedParent { RefetchedParent(parent: parent, gone: true) }
}

/// The per-kind re-fetch calls: one `getMessages` for up to 100 messages of one peer, and one
/// `getPeerPhoto` / `getStickerSet` / `getWallPaper` / `getStoryById` for the other kinds.
struct ParentRefetch: Sendable {
    let client: CloudClient

    /// The cloud method that re-fetches parents of `kind`.
    static func method(_ kind: MediaParent.Kind) -> CloudMethod {
        switch kind {
        case .message: return .getMessages
        case .peerAvatar: return .getPeerPhoto
        case .stickerSet: return .getStickerSet
        case .wallpaper: return .getWallPaper
        case .story: return .getStoryById
        }
    }

    /// Re-fetches `parents`: either message parents of one peer (≤ 100) or a single parent of
    /// another kind. `obtainedAt` (Unix seconds) stamps the fresh records.
    func fetch(_ parents: [MediaParent], obtainedAt: Int64) async throws -> [RefetchedParent] {
        guard let first = parents.first else { return [] }
        switch first {
        case .message(let id):
            let ids = parents.compactMap { p -> Int32? in if case .message(let m) = p { return m.id } else { return nil } }
            let answer = try await client.getMessages(peerId: id.peerId.rawValue, ids: ids)
            var byId: [Int32: CloudProtocol.Message] = [:]
            for m in answer.messages { byId[m.id] = m }
            return parents.map { parent in
                guard case .message(let mid) = parent, let m = byId[mid.id] else { return .gone(parent) }
                let stored = CloudMediaConversion.message(m, obtainedAt: obtainedAt)
                var out = RefetchedParent(parent: parent, gone: false, records: CloudMediaConversion.referenceRecords(of: stored))
                out.locations = Self.locations(stored.media.compactMap { $0 as? any CloudMedia }.flatMap(\.files))
                out.message = stored
                return out
            }
        case .peerAvatar(let peerId):
            return [
                try await gone(first, ifServerSays: .peerIdInvalid) {
                    let peer = CloudMediaConversion.peer(try await client.getPeerPhoto(peerId: peerId.rawValue), obtainedAt: obtainedAt)
                    let records = CloudMediaConversion.referenceRecords(of: peer)
                    guard !records.isEmpty else { return .gone(first) }
                    var out = RefetchedParent(parent: first, gone: false, records: records)
                    out.locations = Self.locations((peer.photo as? CloudAvatarMedia)?.files ?? [])
                    out.peer = peer
                    return out
                }
            ]
        case .stickerSet(let id):
            return [
                try await gone(first, ifServerSays: .stickerSetInvalid) {
                    let set = try await client.getStickerSet(id: id)
                    var resources: [any CloudFetchableResource] = set.stickers.map { CloudDocumentMediaResource(document: $0, reference: .stickerPack(id: id)) }
                    if let thumb = CloudStickerPackThumbnailMediaResource(stickerSet: set) { resources.append(thumb) }
                    return Self.refetched(first, resources, obtainedAt: obtainedAt)
                }
            ]
        case .wallpaper(let id):
            return [
                try await gone(first, ifServerSays: .wallpaperInvalid) {
                    Self.refetched(first, [CloudResources.resource(of: try await client.getWallPaper(id: id))], obtainedAt: obtainedAt)
                }
            ]
        case .story(let peerId, let id):
            return [
                try await gone(first, ifServerSays: .storyIdInvalid) {
                    Self.refetched(first, CloudResources.resources(of: try await client.getStory(peerId: peerId.rawValue, id: id)), obtainedAt: obtainedAt)
                }
            ]
        }
    }

    /// Runs `body`; the server's "no such entity" error means the parent is gone.
    private func gone(
        _ parent: MediaParent, ifServerSays name: CloudErrorName,
        _ body: () async throws -> RefetchedParent
    ) async throws -> RefetchedParent {
        do { return try await body() } catch let e as CloudClientError where e.errorName == name {
            return .gone(parent)
        }
    }

    private static func locations(_ files: [CloudFileDescriptor]) -> [Int64: String] {
        var out: [Int64: String] = [:]
        for f in files { out[f.location.id] = f.resourceId }
        return out
    }

    /// Records of resources built from a re-fetched entity (kinds without a stored Postbox form).
    private static func refetched(_ parent: MediaParent, _ resources: [any CloudFetchableResource], obtainedAt: Int64) -> RefetchedParent {
        var out = RefetchedParent(parent: parent, gone: false)
        for r in resources {
            guard case let .cloud(location, reference, _) = r.fetchSource, !reference.isEmpty else { continue }
            let id = r.id.stringRepresentation
            out.records.append(MediaReferenceRecord(resourceId: id, parent: parent, fileReference: reference.bytes, obtainedAt: obtainedAt))
            out.locations[location.id] = id
        }
        if out.records.isEmpty { out.gone = true }
        return out
    }
}
