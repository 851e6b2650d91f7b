import CloudCore
import Foundation
import Synchronization

/// What the shared media tier did during one prefetch run: logged per file and counted for the
/// report (`tier_*` counters, present only when the cluster has a tier, i.e. once an event came).
final class PrefetchTierTally: Sendable {
    private struct Counts {
        var reads = 0, bytesRead: Int64 = 0, published = 0, bytesPublished: Int64 = 0, publishFailed = 0, discarded = 0, unavailable = 0
        var any = false
    }

    private let counts = Mutex(Counts())

    func record(_ event: SharedMediaTierEvent, log: JobLogger) {
        counts.withLock { c in
            c.any = true
            switch event {
            case .readFromTier(_, let bytes):
                c.reads += 1
                c.bytesRead += bytes
            case .published(_, let bytes):
                c.published += 1
                c.bytesPublished += bytes
            case .publishFailed: c.publishFailed += 1
            case .discarded: c.discarded += 1
            case .unavailable: c.unavailable += 1
            }
        }
        switch event {
        case .readFromTier(let id, let bytes):
            log.debug("tier.read", ["resource": .string(id.stringRepresentation), "bytes": .int(bytes)])
        case .published(let id, let bytes):
            log.debug("tier.published", ["resource": .string(id.stringRepresentation), "bytes": .int(bytes)])
        case .publishFailed(let id, let reason):
            log.warning("tier.publish_failed", ["resource": .string(id.stringRepresentation), "error": .string(reason)])
        case .discarded(let id, let reason):
            log.warning("tier.discarded", ["resource": .string(id.stringRepresentation), "error": .string(reason)])
        case .unavailable(let id, let reason):
            log.warning("tier.unavailable", ["resource": .string(id.stringRepresentation), "error": .string(reason)])
        }
    }

    /// The report's counters; empty when the tier never spoke (no tier, or nothing fetched).
    var counters: [String: Int64] {
        counts.withLock { c in
            guard c.any else { return [:] }
            return [
                "tier_reads": Int64(c.reads), "tier_bytes_read": c.bytesRead, "tier_published": Int64(c.published),
                "tier_bytes_published": c.bytesPublished, "tier_publish_failed": Int64(c.publishFailed),
                "tier_discarded": Int64(c.discarded), "tier_unavailable": Int64(c.unavailable),
            ]
        }
    }
}
