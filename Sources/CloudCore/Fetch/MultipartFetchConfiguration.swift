import Foundation

/// Settings of a `MultipartFetch`.
public struct MultipartFetchConfiguration: Sendable {
    /// DC id → base URL; the CDN URL comes with each redirect.
    public var datacenters: [Int: String]
    /// Sent as `Authorization: Bearer <token>` on cloud calls when set (a secret, never logged).
    public var authToken: String?
    /// Parts in flight over all downloads of this fetcher (the shared limit).
    public var maxConcurrentParts: Int = 16
    /// Parts in flight or waiting to be written, per file: bounds memory to about
    /// `maxPartsPerFile × 1 MiB` per file whatever the file's size.
    public var maxPartsPerFile: Int = 4
    /// Part size for plain URLs (any multiple of 4 KiB dividing 1 MiB).
    public var plainPartSize: Int64 = 1 << 20
    /// Attempts per part for retryable failures (transport errors, 5xx, corrupt or malformed parts).
    public var maxAttempts: Int = 8
    /// First backoff in seconds; doubles per retry up to `maxDelay`, with full jitter.
    public var baseDelay: Double = 0.05
    public var maxDelay: Double = 2
    /// Longest `FLOOD_WAIT` slept through (seconds); longer ones fail the download.
    public var maxFloodWait: Double = 30
    /// `FLOOD_WAIT`s honoured per part before failing.
    public var maxFloodWaits: Int = 10
    /// `FILE_MIGRATE` answers followed per part.
    public var maxMigrations: Int = 3
    /// Revalidations per download before `fileReferenceExpired` is thrown anyway.
    public var maxRevalidations: Int = 2
    /// Total time for one part request, in seconds.
    public var requestTimeout: Double = 60

    public init(datacenters: [Int: String], authToken: String? = nil) {
        self.datacenters = datacenters
        self.authToken = authToken
    }

    /// The base URL of DC `id`, without a trailing slash.
    func baseURL(dc id: Int) -> String? {
        guard var s = datacenters[id] else { return nil }
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }

    /// The wait before retry number `retry` (1-based): exponential, full jitter.
    func backoff(retry: Int) -> Double {
        let plain = min(maxDelay, baseDelay * pow(2, Double(min(max(0, retry - 1), 30))))
        return Double.random(in: (plain / 2)...max(plain / 2, plain))
    }
}
