import CloudCore
import Foundation
import MediaBox

/// The fetcher prefetch downloads through, into the account's one MediaBox: the account's
/// shared `MultipartFetch` (with its revalidation), or — when the job caps its bandwidth — one
/// with the same settings and revalidation on a client of its own whose transport holds the
/// receive limit (the token bucket of `BandwidthLimiter`, as `upload-queue` caps its sending),
/// so the cap slows this job and not the others sharing the account.
enum PrefetchDownloads {
    static func fetcher(account: AccountContext, policy: PrefetchPolicy) throws -> MultipartFetch {
        let shared = try account.fetcher()  // a missing config.yaml is exit 78 before any work
        guard let limit = policy.bandwidthLimit else { return shared }
        let limited: CloudClient
        do {
            limited = try account.cloudClient().withOwnTransport(
                connections: policy.concurrency * shared.configuration.maxPartsPerFile,
                receiveLimit: Int(clamping: limit))
        } catch {
            throw JobError.config("cannot set up the prefetch client of account \(account.id): \(error)")
        }
        return shared.reusingRevalidation(on: limited)
    }
}
