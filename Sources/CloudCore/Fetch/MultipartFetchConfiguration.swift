import Foundation

/// Settings of a `MultipartFetch`.
public struct MultipartFetchConfiguration: Sendable {
    /// DC id → base URL; the CDN URL comes with each redirect.
    public var datacenters: [Int: String]
    /// Sent as `Authorization: Bearer <token>` on cloud calls when set (a secret, never logged).
    public var authToken: String?
    /// Most parts in flight over all downloads of this fetcher (the shared limit's ceiling).
    /// The limit itself starts at `initialConcurrentParts` and moves with the measured
    /// throughput (`AdaptiveConcurrency`): a far datacenter needs many parts in flight, a near
    /// one few.
    public var maxConcurrentParts: Int = 128
    /// The shared limit before any throughput was measured.
    public var initialConcurrentParts: Int = 16
    /// Parts in flight or waiting to be written, per file: bounds memory to about
    /// `maxPartsPerFile × 1 MiB` per file whatever the file's size. Telegram's datacenters
    /// allow 8.
    public var maxPartsPerFile: Int = 8
    /// Part size for plain URLs (any multiple of 4 KiB dividing 1 MiB).
    public var plainPartSize: Int64 = 1 << 20
    /// A wanted range short of the whole file (a video's prefix) comes in whole 1 MiB parts
    /// instead of the file's smaller ones once parts are seen to arrive fast enough that such a
    /// part takes at most this long, in seconds (see `PartSizing`); 0 keeps the file's part size.
    public var largePartSeconds: Double = 0.1
    /// Retries per *part* (transport errors, 5xx, corrupt or malformed parts), FLOOD_WAIT and
    /// FILE_MIGRATE bounds, and the backoff between attempts — the client's policy type, with
    /// shorter waits and more attempts, since a part is cheap to repeat.
    public var retry = CloudRetryPolicy(
        maxAttempts: 8, baseDelay: 0.05, maxDelay: 2, jitter: 0.5,
        maxFloodWait: 30, maxFloodWaits: 10, maxMigrations: 3)
    /// Revalidations per download before `fileReferenceExpired` is thrown anyway.
    public var maxRevalidations: Int = 2
    /// Total time for one part request, in seconds.
    public var requestTimeout: Double = 60

    public init(datacenters: [Int: String], authToken: String? = nil) {
        self.datacenters = datacenters
        self.authToken = authToken
    }

    /// The shared part limit these settings describe.
    func adaptivePartLimit() -> AdaptiveConcurrency {
        AdaptiveConcurrency(initial: initialConcurrentParts, ceiling: maxConcurrentParts)
    }

    /// The base URL of DC `id`, without a trailing slash.
    func baseURL(dc id: Int) -> String? {
        guard var s = datacenters[id] else { return nil }
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }
}
