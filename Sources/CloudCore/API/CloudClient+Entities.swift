import CloudProtocol
import Foundation

/// Parent entities re-fetched for fresh file references (`docs/cloud-protocol.md` §5) and the
/// entity lists; each answer is checked to be the entity that was asked for.
extension CloudClient {
    /// `photos.getPeerPhoto`: the peer with a fresh avatar reference.
    public func getPeerPhoto(peerId: Int64) async throws -> Peer {
        let r: PeerResponse = try await call(.getPeerPhoto, body: GetPeerPhotoRequest(peerId: peerId))
        guard r.peer.id == peerId else { throw Self.mismatch(.getPeerPhoto, "peer \(r.peer.id), asked \(peerId)") }
        return r.peer
    }

    /// `messages.getStickerSet`.
    public func getStickerSet(id: Int64) async throws -> StickerSet {
        let r: StickerSetResponse = try await call(.getStickerSet, body: GetStickerSetRequest(id: id))
        guard r.set.id == id else { throw Self.mismatch(.getStickerSet, "set \(r.set.id), asked \(id)") }
        return r.set
    }

    /// `messages.getAllStickers`.
    public func getAllStickers() async throws -> [StickerSet] {
        try await call(.getAllStickers, body: EmptyBody(), as: AllStickersResponse.self).sets
    }

    /// `account.getWallPaper`.
    public func getWallPaper(id: Int64) async throws -> Wallpaper {
        let r: WallpaperResponse = try await call(.getWallPaper, body: GetWallPaperRequest(id: id))
        guard r.wallpaper.id == id else { throw Self.mismatch(.getWallPaper, "wallpaper \(r.wallpaper.id), asked \(id)") }
        return r.wallpaper
    }

    /// `account.getWallPapers`.
    public func getWallPapers() async throws -> [Wallpaper] {
        try await call(.getWallPapers, body: EmptyBody(), as: WallpapersResponse.self).wallpapers
    }

    /// `stories.getStoryById`.
    public func getStory(peerId: Int64, id: Int32) async throws -> Story {
        let r: StoryResponse = try await call(.getStoryById, body: GetStoryRequest(peerId: peerId, id: id))
        guard r.story.id == id, r.story.peerId == peerId else {
            throw Self.mismatch(.getStoryById, "story \(r.story.peerId):\(r.story.id), asked \(peerId):\(id)")
        }
        return r.story
    }

    /// `stories.getPeerStories`.
    public func getPeerStories(peerId: Int64) async throws -> [Story] {
        let r: StoriesResponse = try await call(.getPeerStories, body: GetPeerStoriesRequest(peerId: peerId))
        if let other = r.stories.first(where: { $0.peerId != peerId }) {
            throw Self.mismatch(.getPeerStories, "story of peer \(other.peerId), asked \(peerId)")
        }
        return r.stories
    }

    static func mismatch(_ method: CloudMethod, _ what: String) -> CloudClientError {
        .badAnswer(method: method.rawValue, dc: "main DC", reason: "answered \(what)")
    }
}
