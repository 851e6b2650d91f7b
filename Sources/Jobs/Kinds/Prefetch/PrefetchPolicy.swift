import Foundation
import MediaBox
import Postbox

/// What one `prefetch-chat-media` run may download, as a value: the job's `params` resolved
/// into Postbox and MediaBox terms, so selection and admission never read raw parameters.
///
/// Defaults are those of `JobParamsSchema.prefetchChatMedia` (the schema fills them in when a
/// job file is validated); the memberwise defaults here match them for tests and library users.
public struct PrefetchPolicy: Sendable, Equatable {
    /// Chats whose media is prefetched (`contacts`, `private` — other users and secret chats —,
    /// `groups`, `channels`).
    public var categories: Set<PeerCategory>
    /// Content types prefetched (`photo`, `video`, `file`, `voice`, `sticker`, `avatar`).
    public var mediaTypes: Set<MediaContentType>
    /// Largest file prefetched per content type; a type without a cap has none.
    public var sizeCaps: [MediaContentType: Int64]
    /// Only messages at most this many seconds old (and avatars of chats active within it).
    public var lookback: Int64
    /// Bytes downloaded per run, at most.
    public var budget: Int64
    /// A file is not started when the media file system's free space would drop below this.
    public var freeSpaceFloor: Int64
    /// A file is not started when the cache (StorageBox total) plus files in flight plus it
    /// would exceed this (nil: no limit).
    public var cacheLimit: Int64?
    /// Files downloaded in parallel.
    public var concurrency: Int
    /// Bytes per second over all of this run's downloads (nil: unlimited).
    public var bandwidthLimit: Int64?

    public static let defaultSizeCaps: [MediaContentType: Int64] = [
        .photo: 1 << 20, .video: 10 << 20, .file: 3 << 20, .voice: 1 << 20, .sticker: 1 << 20, .avatar: 1 << 20,
    ]

    public init(categories: Set<PeerCategory> = Set(PeerCategory.allCases),
                mediaTypes: Set<MediaContentType> = [.photo, .video, .file, .voice, .sticker, .avatar],
                sizeCaps: [MediaContentType: Int64] = PrefetchPolicy.defaultSizeCaps,
                lookback: Int64 = 7 * 86_400, budget: Int64 = 512 << 20, freeSpaceFloor: Int64 = 1 << 30,
                cacheLimit: Int64? = nil, concurrency: Int = 4, bandwidthLimit: Int64? = nil) {
        self.categories = categories
        self.mediaTypes = mediaTypes
        self.sizeCaps = sizeCaps
        self.lookback = lookback
        self.budget = budget
        self.freeSpaceFloor = freeSpaceFloor
        self.cacheLimit = cacheLimit
        self.concurrency = concurrency
        self.bandwidthLimit = bandwidthLimit
    }

    /// The policy of a validated job's `params` (every parameter of the schema is used).
    public init(params p: JobParams) {
        self.init()
        if let words = p.strings("peerCategories") { categories = Self.categories(words: words) }
        if let words = p.strings("mediaTypes") { mediaTypes = Set(words.compactMap(MediaContentType.init(name:))) }
        if let caps = p.byteSizes("sizeCaps") {
            for (name, bytes) in caps { if let type = MediaContentType(name: name) { sizeCaps[type] = bytes } }
        }
        if let d = p.duration("lookback") { lookback = d.components.seconds }
        if let b = p.bytes("budget") { budget = b }
        if let f = p.bytes("freeSpaceFloor") { freeSpaceFloor = f }
        cacheLimit = p.bytes("cacheLimit")
        if let c = p.int("concurrency") { concurrency = max(1, Int(c)) }
        bandwidthLimit = p.bytes("bandwidthLimit")
    }

    /// The Postbox categories of the job-file words: `contacts` → contacts; `private` → other
    /// users and secret chats; `groups`; `channels`. Unknown words are ignored (the schema
    /// rejects them first).
    public static func categories(words: [String]) -> Set<PeerCategory> {
        var out: Set<PeerCategory> = []
        for word in words {
            switch word {
            case "contacts": out.insert(.contact)
            case "private": out.formUnion([.privateChat, .secretChat])
            case "groups": out.insert(.group)
            case "channels": out.insert(.channel)
            default: break
            }
        }
        return out
    }

    /// The cap of `type` (nil: none).
    public func cap(_ type: MediaContentType) -> Int64? { sizeCaps[type] }

    /// The oldest message timestamp inside the lookback window at `now` (Unix seconds).
    public func windowStart(now: Int64) -> Int32 { Int32(clamping: now - lookback) }
}
