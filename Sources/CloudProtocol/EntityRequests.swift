/// `POST /api/photos.getPeerPhoto` → `PeerResponse` (the peer with a fresh avatar reference).
public struct GetPeerPhotoRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public init(peerId: Int64) { self.peerId = peerId }
}

/// Answer of `photos.getPeerPhoto`.
public struct PeerResponse: Codable, Hashable, Sendable {
    public var peer: Peer
    public init(peer: Peer) { self.peer = peer }
}

/// `POST /api/messages.getStickerSet` → `StickerSetResponse`.
public struct GetStickerSetRequest: Codable, Hashable, Sendable {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}

/// Answer of `messages.getStickerSet`.
public struct StickerSetResponse: Codable, Hashable, Sendable {
    public var set: StickerSet
    public init(set: StickerSet) { self.set = set }
}

/// `POST /api/messages.getAllStickers` (body `{}`) → every sticker set.
public struct AllStickersResponse: Codable, Hashable, Sendable {
    public var sets: [StickerSet]
    public init(sets: [StickerSet]) { self.sets = sets }
}

/// `POST /api/account.getWallPaper` → `WallpaperResponse`.
public struct GetWallPaperRequest: Codable, Hashable, Sendable {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}

/// Answer of `account.getWallPaper`.
public struct WallpaperResponse: Codable, Hashable, Sendable {
    public var wallpaper: Wallpaper
    public init(wallpaper: Wallpaper) { self.wallpaper = wallpaper }
}

/// `POST /api/account.getWallPapers` (body `{}`) → every wallpaper.
public struct WallpapersResponse: Codable, Hashable, Sendable {
    public var wallpapers: [Wallpaper]
    public init(wallpapers: [Wallpaper]) { self.wallpapers = wallpapers }
}

/// `POST /api/stories.getStoryById` → `StoryResponse`.
public struct GetStoryRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public var id: Int32
    public init(peerId: Int64, id: Int32) {
        self.peerId = peerId
        self.id = id
    }
}

/// Answer of `stories.getStoryById`.
public struct StoryResponse: Codable, Hashable, Sendable {
    public var story: Story
    public init(story: Story) { self.story = story }
}

/// `POST /api/stories.getPeerStories` → `StoriesResponse`.
public struct GetPeerStoriesRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public init(peerId: Int64) { self.peerId = peerId }
}

/// Answer of `stories.getPeerStories`.
public struct StoriesResponse: Codable, Hashable, Sendable {
    public var stories: [Story]
    public init(stories: [Story]) { self.stories = stories }
}
