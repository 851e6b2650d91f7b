import CloudCore
import Foundation
import MediaBox
import Postbox

/// The `time-based-cleanup` kind: TTL, then LRU size (and count) eviction over the account's
/// MediaBox, never touching what is locked or recently used; then compacts the Postbox file when
/// much of it is free pages. Reports what was freed by peer and content type.
public struct TimeBasedCleanupJob: JobKind {
    public static let name = "time-based-cleanup"
    public static let summary = "TTL, then least-recently-used eviction of the media cache to its size (and count) limit"
    public static let reportEvent = "cleanup.report"
    public static let usesCloud = false
    public static let demo = KindDemo(params: ["maxSize: 8MiB", "immunity: 0s"])

    private static let ageRange: ClosedRange<Double> = 60...(3650 * 86_400)

    public static let ttl = Param<Duration>(
        "ttl", default: .days(7), range: ageRange, doc: "age after which a `cache/` (general tier) resource is removed")
    public static let shortTtl = Param<Duration>(
        "shortTtl", default: .days(1), range: ageRange, doc: "age after which a `short-cache/` resource is removed")
    public static let categoryTtl = Param<[PeerStorageClass: Duration]>(
        "categoryTtl", default: [:], range: ageRange,
        doc: "per peer category TTL overriding `ttl` (the shorter of category and type applies)")
    public static let contentTypeTtl = Param<[MediaContentType: Duration]>(
        "contentTypeTtl", default: [:], range: ageRange, doc: "per content type TTL overriding `ttl`")
    public static let maxSize = Param<ByteCount>.required(
        "maxSize", range: 0...1e15, doc: "cache size limit; LRU eviction runs until under it")
    public static let tierMaxSize = Param<[MediaStorageTier: ByteCount]>(
        "tierMaxSize", default: [:], range: 0...1e15,
        doc: "size limit of one keep tier on its own (`general`: `media/` and `cache/`, `short-lived`: `short-cache/`), applied before `maxSize`")
    public static let maxFiles = OptionalParam<Int64>(
        "maxFiles", range: 1...1_000_000_000, doc: "optional limit on the number of cached files")
    public static let immunity = Param<Duration>(
        "immunity", default: .minutes(10), range: 0...(30 * 86_400), doc: "a resource used within this window is never removed")
    public static let excludePeers = Param<[Int64]>("excludePeers", default: [], doc: "peer ids whose media is never removed")
    public static let excludeContentTypes = Param<Set<MediaContentType>>(
        "excludeContentTypes", default: [], doc: "content types never removed")
    public static let reconcile = Param<Bool>(
        "reconcile", default: true, doc: "fix orphans (files without index rows, rows without files, stale partials)")
    public static let abandonedPartialAge = Param<Duration>(
        "abandonedPartialAge", default: .days(1), range: 60...(3650 * 86_400),
        doc:
            "with `reconcile`: partial downloads no run has indexed or touched for this long (left by a crashed or cancelled run) are removed; indexed prefixes are cache entries like any"
    )
    public static let dryRun = Param<Bool>("dryRun", default: false, doc: "report what would be removed, remove nothing")
    public static let compactDatabase = Param<Bool>(
        "compactDatabase", default: true, doc: "compact the Postbox database when much of it is free pages")
    public static let compactThreshold = Param<Double>(
        "compactThreshold", default: 0.25, range: 0...1, doc: "fraction of free pages that triggers compaction")

    public static let parameters: [any JobParameter] = [
        ttl, shortTtl, categoryTtl, contentTypeTtl, maxSize, tierMaxSize, maxFiles, immunity, excludePeers, excludeContentTypes,
        reconcile, abandonedPartialAge, dryRun, compactDatabase, compactThreshold,
    ]

    /// Victims listed in a dry run's report.
    static let listedVictims = 1000

    public init() {}

    /// The cleanup options of validated parameters: every field set from a parameter.
    public static func options(_ p: JobParams, dryRun forced: Bool) -> CleanupOptions {
        let dryRun = forced || p[dryRun]
        var options = CleanupOptions(
            generalTTL: p[ttl].wholeSeconds,
            shortLivedTTL: p[shortTtl].wholeSeconds,
            peerClassTTL: p[categoryTtl].mapValues(\.wholeSeconds),
            contentTypeTTL: p[contentTypeTtl].mapValues(\.wholeSeconds),
            sizeLimit: p[maxSize].bytes,
            countLimit: p[maxFiles],
            immunityWindow: p[immunity].wholeSeconds,
            excludedPeers: Set(p[excludePeers].map(PeerId.init)),
            excludedContentTypes: p[excludeContentTypes],
            dryRun: dryRun,
            listVictims: dryRun ? listedVictims : 0,
            reconcile: p[reconcile])
        options.tierSizeLimits = p[tierMaxSize].mapValues(\.bytes)
        options.reconciliation.stalePartialAge = p[abandonedPartialAge].wholeSeconds
        return options
    }

    public func run(_ context: JobContext) async throws -> JobReport {
        let options = Self.options(context.params, dryRun: context.dryRun)
        try Task.checkCancellation()
        let cleanup = try await TimeBasedCleanup(mediaBox: context.account.mediaBox).runDetached(options)
        var report = Self.report(cleanup)
        if let shared = try SharedMediaTierSetup.tier(root: DataRoot(url: context.account.paths.directory.deletingLastPathComponent())) {
            try Task.checkCancellation()
            let tierReport = try await Self.trimTier(shared, options: options)
            Self.add(tierReport, to: &report)
        }
        if !options.dryRun, context.params[Self.compactDatabase] {
            let compaction = DatabaseCompaction(threshold: context.params[Self.compactThreshold])
            report.counters["database_bytes_reclaimed"] = try compaction.run(on: context.account.postbox)
        }
        return report
    }

    /// Trims the cluster's shared media tier to `sharedMedia.ttl` and `sharedMedia.maxSize` (by
    /// its index, least recently used first); the job's `immunity` is the grace that protects a
    /// read in progress on any host.
    static func trimTier(_ shared: SharedMediaTierSetupResult, options: CleanupOptions) async throws -> SharedMediaTierCleanup.Report {
        let tierOptions = SharedMediaTierCleanup.Options(
            ttl: shared.limits.ttl, maxSize: shared.limits.maxSize, grace: options.immunityWindow, dryRun: options.dryRun, now: options.now)
        do {
            return try await SharedMediaTierCleanup(tier: shared.tier).run(tierOptions)
        } catch let error as S3Error where error.isRetryable {
            throw JobError.cloudUnavailable("cannot trim the shared media tier: \(error)")
        }
    }

    /// The tier's part of the report: `tier_*` counters, and in a dry run the objects it would
    /// remove.
    static func add(_ r: SharedMediaTierCleanup.Report, to report: inout JobReport) {
        report.counters["tier_objects_removed"] = Int64(r.removed.count)
        report.counters["tier_bytes_freed"] = r.bytesRemoved
        report.counters["tier_objects_expired"] = Int64(r.count(.expired))
        report.counters["tier_objects_evicted"] = Int64(r.count(.evicted))
        report.counters["tier_skipped_recent"] = Int64(r.skippedRecent)
        report.counters["tier_failed"] = Int64(r.failed)
        report.counters["tier_orphans_removed"] = Int64(r.orphansRemoved)
        report.counters["tier_objects"] = Int64(r.objects)
        report.counters["tier_bytes"] = r.bytes
        let verb = r.dryRun ? "would remove" : "removed"
        report.summary.append(
            "shared tier: \(verb) \(r.removed.count) objects, \(ByteSize.human(r.bytesRemoved)) (expired \(r.count(.expired)), evicted \(r.count(.evicted))); "
                + "tier now \(ByteSize.human(r.bytes)) in \(r.objects) objects" + (r.withinLimit ? "" : " — still over its limit (recently used objects)"))
        if r.dryRun {
            report.details["tier_would_remove"] = .array(
                r.removed.map {
                    .object([
                        "resource": .string($0.entry.resourceId), "object": .string($0.entry.objectKey), "bytes": .int($0.entry.size),
                        "last_used": .int($0.entry.lastUsedAt), "reason": .string($0.reason.rawValue),
                    ])
                })
        }
    }

    /// The one mapping of a cleanup's result to counters, metrics, summary and details, for a
    /// run and a dry run alike.
    static func report(_ r: CleanupReport) -> JobReport {
        var counters: [String: Int64] = [
            "files_removed": r.removed.count, "bytes_freed": r.removed.bytes,
            "files_expired": r.expired.count, "files_evicted": r.evicted.count,
            "skipped_locked": r.skippedLocked, "skipped_immune": r.skippedImmune,
            "cache_bytes": r.after.bytes, "cache_files": r.after.count,
            "stale_rows": r.staleRows, "failed": r.failed,
        ]
        if let reconciliation = r.reconciliation {
            counters["reconciled_indexed_files"] = reconciliation.indexedFiles.count
            counters["reconciled_dropped_rows"] = reconciliation.droppedRows.count
            counters["reconciled_removed_partials"] = reconciliation.removedPartials.count
        }
        let byPeer = r.byPeer.map { row in
            LogValue.object(["peer": .int(row.peerId ?? 0), "files": .int(row.count), "bytes": .int(row.bytes)])
        }
        let byType = r.byContentType.map { row in
            LogValue.object(["content_type": .string(row.contentType ?? "other"), "files": .int(row.count), "bytes": .int(row.bytes)])
        }
        var details: [String: LogValue] = ["dry_run": .bool(r.dryRun), "freed_by_peer": .array(byPeer), "freed_by_content_type": .array(byType)]
        if r.dryRun {
            details["would_remove"] = .array(
                r.victims.map {
                    .object([
                        "file": .string($0.fileName), "location": .string($0.location), "peer": .int($0.peerId),
                        "content_type": .string($0.contentType), "bytes": .int($0.size), "reason": .string($0.reason.rawValue),
                    ])
                })
        }
        let samples =
            r.byPeer.map {
                MetricSample(
                    "cleanup_freed_bytes", labels: ["peer": String($0.peerId ?? 0)], value: Double($0.bytes),
                    help: "bytes freed by the last cleanup, per peer")
            }
            + r.byContentType.map {
                MetricSample(
                    "cleanup_freed_bytes_by_type", labels: ["content_type": $0.contentType ?? "other"], value: Double($0.bytes),
                    help: "bytes freed by the last cleanup, per content type")
            }
        let verb = r.dryRun ? "would free" : "freed"
        var summary = [
            "\(verb) \(ByteSize.human(r.removed.bytes)) in \(r.removed.count) files (expired \(r.expired.count), evicted \(r.evicted.count)); "
                + "cache now \(ByteSize.human(r.after.bytes)) in \(r.after.count) files"
                + (r.withinLimits ? "" : " — still over its limits (locked or immune resources)")
        ]
        for row in r.byPeerAndContentType.sorted(by: { $0.bytes > $1.bytes }).prefix(10) {
            summary.append("  peer \(row.peerId ?? 0) \(row.contentType ?? "?"): \(row.count) files, \(ByteSize.human(row.bytes))")
        }
        return JobReport(counters: counters, samples: samples, summary: summary, details: details)
    }
}
