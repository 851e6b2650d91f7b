import Foundation
import MediaBox
import Postbox

/// The chat categories prefetch chooses from, as the mobile clients' auto-download settings
/// name them: `contacts`, `private` (other users and secret chats), `groups`, `channels`.
public enum PrefetchPeerCategory: String, Sendable, CaseIterable, ParamWord {
    case contacts, `private`, groups, channels

    public var word: String { rawValue }

    /// The Postbox categories this word covers.
    public var peerCategories: Set<PeerCategory> {
        switch self {
        case .contacts: return [.contact]
        case .private: return [.privateChat, .secretChat]
        case .groups: return [.group]
        case .channels: return [.channel]
        }
    }
}

/// What one `prefetch-chat-media` run may download, as a value: the job's `params` resolved
/// into Postbox and MediaBox terms, so selection and admission never read raw parameters.
///
/// The defaults are the kind's parameter defaults (`PrefetchChatMediaJob`), read from there.
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
    /// Streamable videos larger than this are prefetched as their header and this many bytes
    /// from the start, whatever their size cap (nil: whole videos within the cap).
    public var videoPrefix: Int64?

    public typealias Kind = PrefetchChatMediaJob
    public static let defaultSizeCaps: [MediaContentType: Int64] = Kind.sizeCaps.defaultValue!.mapValues(\.bytes)

    public init(
        categories: Set<PeerCategory> = PrefetchPolicy.categories(Kind.peerCategories.defaultValue!),
        mediaTypes: Set<MediaContentType> = Kind.mediaTypes.defaultValue!,
        sizeCaps: [MediaContentType: Int64] = PrefetchPolicy.defaultSizeCaps,
        lookback: Int64 = Kind.lookback.defaultValue!.wholeSeconds,
        budget: Int64 = Kind.budget.defaultValue!.bytes,
        freeSpaceFloor: Int64 = Kind.freeSpaceFloor.defaultValue!.bytes,
        cacheLimit: Int64? = nil, concurrency: Int = Kind.concurrency.defaultValue!, bandwidthLimit: Int64? = nil,
        videoPrefix: Int64? = nil
    ) {
        self.videoPrefix = videoPrefix
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

    /// The policy of a validated job's `params` (every parameter of the kind is used).
    public init(params p: JobParams) {
        self.init(
            categories: Self.categories(p[Kind.peerCategories]),
            mediaTypes: p[Kind.mediaTypes],
            sizeCaps: p[Kind.sizeCaps].mapValues(\.bytes),
            lookback: p[Kind.lookback].wholeSeconds,
            budget: p[Kind.budget].bytes,
            freeSpaceFloor: p[Kind.freeSpaceFloor].bytes,
            cacheLimit: p[Kind.cacheLimit]?.bytes,
            concurrency: p[Kind.concurrency],
            bandwidthLimit: p[Kind.bandwidthLimit]?.bytes,
            videoPrefix: p[Kind.videoPrefix]?.bytes)
    }

    /// The Postbox categories of the job-file words.
    public static func categories(_ words: Set<PrefetchPeerCategory>) -> Set<PeerCategory> {
        words.reduce(into: []) { $0.formUnion($1.peerCategories) }
    }

    /// The cap of `type` (nil: none).
    public func cap(_ type: MediaContentType) -> Int64? { sizeCaps[type] }

    /// The oldest message timestamp inside the lookback window at `now` (Unix seconds).
    public func windowStart(now: Int64) -> Int32 { Int32(clamping: now - lookback) }
}
