import Foundation
import MediaBox
import Postbox

/// The `time-based-cleanup` kind: TTL, then LRU size (and count) eviction over the account's
/// MediaBox, never touching what is locked or recently used; then compacts the Postbox file when
/// much of it is free pages. Reports what was freed by peer and content type.
public struct TimeBasedCleanupJob: JobKindRunner {
    public init() {}

    public func run(_ context: JobContext) async throws -> JobReport {
        let p = context.params
        var options = CleanupOptions()
        options.generalTTL = p.duration("ttl").map(Self.seconds)
        options.shortLivedTTL = p.duration("shortTtl").map(Self.seconds)
        for (word, ttl) in p.durations("categoryTtl") ?? [:] {
            if let cls = PeerStorageClass.allCases.first(where: { $0.description == word }) { options.peerClassTTL[cls] = Self.seconds(ttl) }
        }
        for (word, ttl) in p.durations("contentTypeTtl") ?? [:] {
            if let type = MediaContentType(name: word) { options.contentTypeTTL[type] = Self.seconds(ttl) }
        }
        options.sizeLimit = p.bytes("maxSize")
        options.countLimit = p.int("maxFiles")
        options.immunityWindow = p.duration("immunity").map(Self.seconds) ?? 600
        options.excludedPeers = Set((p.ints("excludePeers") ?? []).map(PeerId.init))
        options.excludedContentTypes = Set((p.strings("excludeContentTypes") ?? []).compactMap(MediaContentType.init(name:)))
        options.reconcile = p.bool("reconcile") ?? true
        options.dryRun = context.dryRun || (p.bool("dryRun") ?? false)
        options.listVictims = options.dryRun ? 1000 : 0

        try Task.checkCancellation()
        let cleanup = TimeBasedCleanup(mediaBox: context.account.mediaBox)
        let report = try await cleanup.runDetached(options)
        var counters: [String: Int64] = [
            "files_removed": report.removed.count, "bytes_freed": report.removed.bytes,
            "files_expired": report.expired.count, "files_evicted": report.evicted.count,
            "skipped_locked": report.skippedLocked, "skipped_immune": report.skippedImmune,
            "cache_bytes": report.after.bytes, "cache_files": report.after.count,
            "stale_rows": report.staleRows, "failed": report.failed,
        ]
        if let r = report.reconciliation {
            counters["reconciled_indexed_files"] = r.indexedFiles.count
            counters["reconciled_dropped_rows"] = r.droppedRows.count
            counters["reconciled_removed_partials"] = r.removedPartials.count
        }

        // Postbox compaction: users' databases grow to gigabytes that nothing reclaims.
        if !options.dryRun, p.bool("compactDatabase") ?? true {
            let postbox = context.account.postbox
            let free = try postbox.freeBytes()
            let size = max(postbox.fileSize(), 1)
            if Double(free) / Double(size) >= (p.double("compactThreshold") ?? 0.25) {
                counters["database_bytes_reclaimed"] = try postbox.compact()
            } else {
                counters["database_bytes_reclaimed"] = 0
            }
        }

        var samples: [MetricSample] = []
        for row in report.byPeer {
            samples.append(MetricSample("cleanup_freed_bytes", labels: ["peer": String(row.peerId ?? 0)], value: Double(row.bytes), help: "bytes freed by the last cleanup, per peer"))
        }
        for row in report.byContentType {
            samples.append(MetricSample("cleanup_freed_bytes_by_type", labels: ["content_type": row.contentType ?? "other"], value: Double(row.bytes), help: "bytes freed by the last cleanup, per content type"))
        }
        let verb = options.dryRun ? "would free" : "freed"
        var summary = ["\(verb) \(ByteSize.human(report.removed.bytes)) in \(report.removed.count) files (expired \(report.expired.count), evicted \(report.evicted.count)); cache now \(ByteSize.human(report.after.bytes)) in \(report.after.count) files\(report.withinLimits ? "" : " — still over its limits (locked or immune resources)")"]
        for row in report.byPeerAndContentType.sorted(by: { $0.bytes > $1.bytes }).prefix(10) {
            summary.append("  peer \(row.peerId ?? 0) \(row.contentType ?? "?"): \(row.count) files, \(ByteSize.human(row.bytes))")
        }
        context.logger.info("cleanup.report", [
            "dry_run": .bool(options.dryRun), "bytes_freed": .int(report.removed.bytes), "files_removed": .int(report.removed.count),
            "by_peer": .array(report.byPeer.map { .object(["peer": .int($0.peerId ?? 0), "files": .int($0.count), "bytes": .int($0.bytes)]) }),
            "by_content_type": .array(report.byContentType.map { .object(["content_type": .string($0.contentType ?? "other"), "files": .int($0.count), "bytes": .int($0.bytes)]) }),
        ])
        var details: [String: LogValue] = [
            "freed_by_peer": .array(report.byPeer.map { .object(["peer": .int($0.peerId ?? 0), "files": .int($0.count), "bytes": .int($0.bytes)]) }),
            "freed_by_content_type": .array(report.byContentType.map { .object(["content_type": .string($0.contentType ?? "other"), "files": .int($0.count), "bytes": .int($0.bytes)]) }),
        ]
        if options.dryRun {
            details["would_remove"] = .array(report.victims.map {
                .object(["file": .string($0.fileName), "location": .string($0.location), "peer": .int($0.peerId), "content_type": .string($0.contentType),
                         "bytes": .int($0.size), "reason": .string($0.reason.rawValue)])
            })
        }
        return JobReport(counters: counters, samples: samples, summary: summary, details: details)
    }

    static func seconds(_ d: Duration) -> Int64 { d.components.seconds }
}
