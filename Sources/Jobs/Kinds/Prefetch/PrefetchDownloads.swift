import CloudCore
import Foundation
import MediaBox

/// Where prefetch downloads go through: the account's MediaBox (whose fetcher is the account's
/// shared `MultipartFetch`, with its revalidation), or — when the job caps its bandwidth — a
/// MediaBox on the same directory whose fetcher runs on a transport with a global receive limit
/// (`TransportConfiguration.maxReceiveBytesPerSecond`, the token bucket of `BandwidthLimiter`,
/// the same mechanism `upload-queue` uses for its send limit) and the shared fetcher's
/// revalidation. Both MediaBoxes lock partial files with `flock`, so they coordinate with each
/// other exactly as two processes do.
enum PrefetchDownloads {
    static func mediaBox(account: AccountContext, policy: PrefetchPolicy) throws -> MediaBox {
        let shared = try account.fetcher() // a missing config.yaml is exit 78 before any work
        guard let limit = policy.bandwidthLimit else { return account.mediaBox }
        let client = try account.cloudClient()
        let parts = policy.concurrency * shared.configuration.maxPartsPerFile
        var tc = TransportConfiguration()
        tc.connectTimeout = client.config.connectTimeout
        tc.requestTimeout = client.config.requestTimeout
        tc.idleTimeout = min(30, client.config.requestTimeout)
        tc.maxCollectedBodySize = max(client.config.maxAnswerSize, 2 << 20)
        tc.maxConnectionsPerHost = max(16, parts)
        tc.maxTotalConnections = max(64, parts + 8)
        tc.handlePoolSize = max(64, parts + 8)
        tc.maxReceiveBytesPerSecond = Int(clamping: limit)
        let limited: CloudClient
        do {
            limited = try CloudClient(config: client.config, transport: CurlTransport(configuration: tc))
        } catch {
            throw JobError.config("cannot set up the prefetch client of account \(account.id): \(error)")
        }
        let box = account.mediaBox
        return try MediaBox(basePath: box.basePath, fetcher: shared.reusingRevalidation(on: limited), options: box.options)
    }
}
