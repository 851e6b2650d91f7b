import Foundation
import Postbox

/// What `TimeBasedCleanup` may remove. Times are seconds; nil TTLs and limits mean "none".
///
/// A resource's TTL is the smallest that applies to it: its tier's (`generalTTL` for
/// `media/` and `cache/`, `shortLivedTTL` for `short-cache/`), its peer class's override and its
/// content type's override. Excluded peers and content types are never removed, nor is anything
/// accessed within `immunityWindow`, nor anything locked by a reader or writer.
public struct CleanupOptions: Sendable {
    public var generalTTL: Int64?
    public var shortLivedTTL: Int64?
    /// Per peer class TTL (private / group / channel), e.g. keep channel media one day.
    public var peerClassTTL: [PeerStorageClass: Int64]
    /// Per content type TTL, e.g. keep videos three days.
    public var contentTypeTTL: [MediaContentType: Int64]
    /// After TTL removal, evict least-recently-used resources until the cache holds at most this
    /// many bytes (index totals over every location).
    public var sizeLimit: Int64?
    /// … and at most this many files.
    public var countLimit: Int64?
    /// Bytes each keep tier may hold, on its own (`shortLived` for `short-cache/`, `general` for
    /// the rest): before the overall limit, the least recently used entries of a tier over its
    /// limit are evicted, whatever the other tier holds.
    public var tierSizeLimits: [MediaStorageTier: Int64] = [:]
    /// Resources accessed less than this long ago are never removed.
    public var immunityWindow: Int64
    public var excludedPeers: Set<PeerId>
    public var excludedContentTypes: Set<MediaContentType>
    /// Decide and report, remove nothing (lock checks are still made, non-blocking).
    public var dryRun: Bool
    /// How many victims to list in the report (the dry-run listing); 0 lists none.
    public var listVictims: Int
    /// Run the reconciliation pass (the only file-system walk) before selecting victims.
    public var reconcile: Bool
    public var reconciliation: ReconciliationOptions
    /// Threads that unlink in parallel.
    public var removalThreads: Int
    /// Sixteen, whatever the core count: an unlink is mostly a wait, not work. Freeing a file's
    /// blocks waits on the device (ext4 mounted with `discard` sends the discard synchronously
    /// from the unlink or the last close), and on the journal; the CPU part is ~50–90 µs of
    /// kernel time. Many threads keep many of those waits in flight, in different shard
    /// directories. Measured on two cores with the disk busy, 16 threads removed files 2.4–2.7×
    /// faster than 4.
    /// (The processors online, from `sysconf`: `ProcessInfo`'s first use alone costs a cron run
    /// a tenth of a millisecond.)
    public static let defaultRemovalThreads = max(16, sysconf(Int32(_SC_NPROCESSORS_ONLN)) * 2)
    /// Victims removed per batch (one index transaction each); bounds memory.
    public var batchSize: Int
    /// "Now" in Unix seconds (tests pin it); nil = the clock.
    public var now: Int64?

    public init(
        generalTTL: Int64? = nil, shortLivedTTL: Int64? = nil,
        peerClassTTL: [PeerStorageClass: Int64] = [:], contentTypeTTL: [MediaContentType: Int64] = [:],
        sizeLimit: Int64? = nil, countLimit: Int64? = nil, immunityWindow: Int64 = 0,
        excludedPeers: Set<PeerId> = [], excludedContentTypes: Set<MediaContentType> = [],
        dryRun: Bool = false, listVictims: Int = 0, reconcile: Bool = false,
        reconciliation: ReconciliationOptions = ReconciliationOptions(),
        removalThreads: Int = CleanupOptions.defaultRemovalThreads,
        batchSize: Int = 4096, now: Int64? = nil
    ) {
        self.generalTTL = generalTTL
        self.shortLivedTTL = shortLivedTTL
        self.peerClassTTL = peerClassTTL
        self.contentTypeTTL = contentTypeTTL
        self.sizeLimit = sizeLimit
        self.countLimit = countLimit
        self.immunityWindow = immunityWindow
        self.excludedPeers = excludedPeers
        self.excludedContentTypes = excludedContentTypes
        self.dryRun = dryRun
        self.listVictims = listVictims
        self.reconcile = reconcile
        self.reconciliation = reconciliation
        self.removalThreads = removalThreads
        self.batchSize = batchSize
        self.now = now
    }

    /// The TTL that applies to an index row, or nil if none does.
    func ttl(for row: StorageBoxLRURow) -> Int64? {
        var result: Int64? = row.key.location.tier == .shortLived ? shortLivedTTL : generalTTL
        func take(_ v: Int64?) { if let v { result = min(result ?? v, v) } }
        if let pc = row.peerClass { take(peerClassTTL[pc]) }
        take(contentTypeTTL[row.contentType])
        return result
    }

    /// The smallest TTL anywhere: rows accessed more recently than `now - minTTL` cannot expire.
    var minimumTTL: Int64? {
        ([generalTTL, shortLivedTTL] + peerClassTTL.values.map { Optional($0) } + contentTypeTTL.values.map { Optional($0) })
            .compactMap { $0 }.min()
    }

    func isExcluded(_ row: StorageBoxLRURow) -> Bool {
        excludedPeers.contains(row.peerId) || excludedContentTypes.contains(row.contentType)
    }
}

/// How reconciliation treats what it finds.
public struct ReconciliationOptions: Sendable {
    /// What to do with a complete file that has no index row.
    public enum UnindexedFilePolicy: String, Sendable, Codable {
        /// Add a row (content type `other`, no peer, access time = mtime) so it is accounted
        /// for and ages out normally.
        case index
        /// Remove the file (unless locked).
        case remove
    }
    public var unindexedFiles: UnindexedFilePolicy
    /// Unlocked `_partial` files not modified for this long are removed (seconds).
    public var stalePartialAge: Int64
    /// Files modified more recently than this are left for the next run (a writer may be about
    /// to index them).
    public var settleTime: Int64
    /// Foreign entries (names MediaBox never produces, links, FIFOs) not modified for this long
    /// are removed (seconds); nil leaves them, counted. A cleanup that reconciles sets it to its
    /// immunity window (at least `settleTime`).
    public var foreignFileAge: Int64?

    public init(
        unindexedFiles: UnindexedFilePolicy = .index, stalePartialAge: Int64 = 24 * 3600, settleTime: Int64 = 60,
        foreignFileAge: Int64? = nil
    ) {
        self.unindexedFiles = unindexedFiles
        self.stalePartialAge = stalePartialAge
        self.settleTime = settleTime
        self.foreignFileAge = foreignFileAge
    }
}
