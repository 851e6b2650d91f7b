// The `params:` contract of each job kind. The kinds' engineers read these; `docs/job-files.md`
// lists the same table. Names are camelCase like the rest of the job file.

/// Shared vocabularies used by several kinds.
public enum ParamWords {
    /// Peer categories of the sync and cleanup jobs.
    public static let peerCategories = ["private", "group", "channel"]
    /// Peer categories of prefetch (the mobile client's auto-download categories).
    public static let prefetchCategories = ["contacts", "private", "groups", "channels"]
    /// Media types prefetch chooses from.
    public static let mediaTypes = ["photo", "video", "file", "voice", "sticker", "avatar"]
    /// Content types StorageBox records (cleanup's per-type options and exclusions).
    public static let contentTypes = ["photo", "video", "file", "voice", "sticker", "avatar", "other"]
    /// Parent entities a file reference is refreshed through.
    public static let parentKinds = ["message", "avatar", "stickerSet", "wallpaper", "story"]
}

private let MiB: Int64 = 1 << 20
private let GiB: Int64 = 1 << 30
private func list(_ words: [String]) -> ParamValue { .list(words.map(ParamValue.string)) }
private func seconds(_ value: Int64) -> ParamValue { .duration(.seconds(value)) }
private let day: Int64 = 86_400

extension JobParamsSchema {
    /// `sync-history` (issue 5): chat list and recent history into Postbox, incrementally.
    public static let syncHistory = JobParamsSchema(kind: JobKind.syncHistory.rawValue, params: [
        ParamSpec("peerCategories", .list(.oneOf(ParamWords.peerCategories)), default: list(ParamWords.peerCategories),
                  doc: "which chats to sync"),
        ParamSpec("peers", .list(.int), default: .list([]),
                  doc: "only these peer ids (empty = every peer in the chat list)"),
        ParamSpec("maxPeers", .int, default: .int(100), range: 1...100_000,
                  doc: "chats taken from the top of the chat list per run"),
        ParamSpec("initialMessages", .int, default: .int(200), range: 1...1_000_000,
                  doc: "messages fetched per peer on its first sync"),
        ParamSpec("pageSize", .int, default: .int(100), range: 1...100,
                  doc: "messages per history request (protocol limit 100)"),
        ParamSpec("lookback", .duration, default: seconds(30 * day), range: 60...(3650 * 86_400),
                  doc: "ignore history older than this on a first sync"),
        ParamSpec("fillHoles", .bool, default: .bool(true),
                  doc: "fill known gaps in already-synced history"),
        ParamSpec("refillTrimmed", .bool, default: .bool(false),
                  doc: "also fetch again the ranges history-retention dropped (with `peers`, on request)"),
        ParamSpec("concurrency", .int, default: .int(4), range: 1...32,
                  doc: "peers synced in parallel"),
        ParamSpec("requestRate", .double, default: .double(20), range: 0.1...1000,
                  doc: "API requests per second, at most"),
    ])

    /// `prefetch-chat-media` (issue 8): media of recent messages, newest first, within budgets.
    public static let prefetchChatMedia = JobParamsSchema(kind: JobKind.prefetchChatMedia.rawValue, params: [
        ParamSpec("peerCategories", .list(.oneOf(ParamWords.prefetchCategories)), default: list(ParamWords.prefetchCategories),
                  doc: "chats whose media is prefetched"),
        ParamSpec("mediaTypes", .list(.oneOf(ParamWords.mediaTypes)), default: list(ParamWords.mediaTypes),
                  doc: "media types prefetched"),
        ParamSpec("sizeCaps", .map(keys: ParamWords.mediaTypes, value: .byteSize),
                  default: .map(["photo": .bytes(1 * MiB), "video": .bytes(10 * MiB), "file": .bytes(3 * MiB),
                                 "voice": .bytes(1 * MiB), "sticker": .bytes(1 * MiB), "avatar": .bytes(1 * MiB)]),
                  range: 0...1e13,
                  doc: "largest file prefetched per media type; keys not given keep their default"),
        ParamSpec("lookback", .duration, default: seconds(7 * day), range: 60...(3650 * 86_400),
                  doc: "only messages newer than this"),
        ParamSpec("budget", .byteSize, default: .bytes(512 * MiB), range: 1...1e13,
                  doc: "bytes downloaded per run, at most"),
        ParamSpec("freeSpaceFloor", .byteSize, default: .bytes(1 * GiB), range: 0...1e14,
                  doc: "stop when the file system's free space would drop below this"),
        ParamSpec("cacheLimit", .byteSize, range: 1...1e14,
                  doc: "never grow the media cache past this (use the cleanup job's maxSize); default: no extra limit"),
        ParamSpec("concurrency", .int, default: .int(4), range: 1...64,
                  doc: "files downloaded in parallel"),
        ParamSpec("bandwidthLimit", .byteSize, range: 1024...1e12,
                  doc: "bytes per second over all downloads; default unlimited"),
    ])

    /// `revalidate-references` (issue 6): refresh references expired or expiring soon, per parent.
    public static let revalidateReferences = JobParamsSchema(kind: JobKind.revalidateReferences.rawValue, params: [
        ParamSpec("window", .duration, default: seconds(2400), range: 0...(30 * 86_400),
                  doc: "refresh references that expire within this window (or already have)"),
        ParamSpec("parentKinds", .list(.oneOf(ParamWords.parentKinds)), default: list(ParamWords.parentKinds),
                  doc: "parent entities refreshed"),
        ParamSpec("batchSize", .int, default: .int(100), range: 1...100,
                  doc: "messages of one peer per call (protocol limit 100)"),
        ParamSpec("requestRate", .double, default: .double(10), range: 0.1...1000,
                  doc: "revalidation calls per second, at most"),
        ParamSpec("concurrency", .int, default: .int(4), range: 1...64,
                  doc: "revalidation calls in flight"),
        ParamSpec("maxParents", .int, default: .int(10_000), range: 1...10_000_000,
                  doc: "parent entities refreshed per run, at most"),
        ParamSpec("requestTimeout", .duration, default: seconds(30), range: 1...3600,
                  doc: "a waiter gets an error after this long, never stalls"),
    ])

    /// `upload-queue` (issue 7): drain the persistent multipart upload queue.
    public static let uploadQueue = JobParamsSchema(kind: JobKind.uploadQueue.rawValue, params: [
        ParamSpec("concurrency", .int, default: .int(2), range: 1...16,
                  doc: "queue items uploaded in parallel"),
        ParamSpec("partsInFlight", .int, default: .int(30), range: 1...64,
                  doc: "parts in flight per big-file upload (the seed uses 30)"),
        ParamSpec("maxItems", .int, range: 1...10_000_000,
                  doc: "queue items per run, at most; default all"),
        ParamSpec("requestRate", .double, range: 0.1...10_000,
                  doc: "part requests per second, at most; default unlimited"),
        ParamSpec("bandwidthLimit", .byteSize, range: 1024...1e12,
                  doc: "bytes per second over all uploads; default unlimited"),
        ParamSpec("itemAttempts", .int, default: .int(5), range: 1...100,
                  doc: "attempts per item before it is marked failed"),
        ParamSpec("itemBackoff", .duration, default: seconds(30), range: 0...86_400,
                  doc: "first wait before retrying an item (doubles each attempt)"),
        ParamSpec("leaseDuration", .duration, default: seconds(300), range: 10...86_400,
                  doc: "how long an item is leased to this process; renewed while uploading"),
        ParamSpec("retryWithin", .duration, default: seconds(60), range: 0...86_400,
                  doc: "an item whose backoff ends within this time is retried in the same run"),
    ])

    /// `time-based-cleanup` (issue 4): TTL, then LRU to the size (and count) limit, plus compaction.
    public static let timeBasedCleanup = JobParamsSchema(kind: JobKind.timeBasedCleanup.rawValue, params: [
        ParamSpec("ttl", .duration, default: seconds(7 * day), range: 60...(3650 * 86_400),
                  doc: "age after which a `cache/` (general tier) resource is removed"),
        ParamSpec("shortTtl", .duration, default: seconds(1 * day), range: 60...(3650 * 86_400),
                  doc: "age after which a `short-cache/` resource is removed"),
        ParamSpec("categoryTtl", .map(keys: ParamWords.peerCategories, value: .duration), default: .map([:]),
                  range: 60...(3650 * 86_400),
                  doc: "per peer category TTL overriding `ttl` (private, group, channel)"),
        ParamSpec("contentTypeTtl", .map(keys: ParamWords.contentTypes, value: .duration), default: .map([:]),
                  range: 60...(3650 * 86_400),
                  doc: "per content type TTL overriding `ttl` (the shorter of category and type applies)"),
        ParamSpec("maxSize", .byteSize, required: true, range: 0...1e15,
                  doc: "cache size limit; LRU eviction runs until under it"),
        ParamSpec("maxFiles", .int, range: 1...1_000_000_000,
                  doc: "optional limit on the number of cached files"),
        ParamSpec("immunity", .duration, default: seconds(600), range: 0...(30 * 86_400),
                  doc: "a resource used within this window is never removed"),
        ParamSpec("excludePeers", .list(.int), default: .list([]),
                  doc: "peer ids whose media is never removed"),
        ParamSpec("excludeContentTypes", .list(.oneOf(ParamWords.contentTypes)), default: .list([]),
                  doc: "content types never removed"),
        ParamSpec("reconcile", .bool, default: .bool(true),
                  doc: "fix orphans (files without index rows, rows without files, stale partials)"),
        ParamSpec("dryRun", .bool, default: .bool(false),
                  doc: "report what would be removed, remove nothing"),
        ParamSpec("compactDatabase", .bool, default: .bool(true),
                  doc: "compact the Postbox database when much of it is free pages"),
        ParamSpec("compactThreshold", .double, default: .double(0.25), range: 0...1,
                  doc: "fraction of free pages that triggers compaction"),
    ])
}
