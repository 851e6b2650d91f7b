import Foundation
import Postbox

/// Why a resource was chosen.
public enum CleanupReason: String, Sendable, Codable {
    /// Past its TTL.
    case expired
    /// Least recently used while the cache was over its size or count limit.
    case leastRecentlyUsed
}

/// One resource removed (or, in a dry run, that would be).
public struct CleanupVictim: Sendable, Codable, Equatable {
    public var location: String
    public var fileName: String
    public var peerId: Int64
    public var contentType: String
    public var size: Int64
    public var accessTime: Int64
    public var reason: CleanupReason
}

/// Freed usage for one peer, content type, or both.
public struct CleanupUsageRow: Sendable, Codable, Equatable {
    public var peerId: Int64?
    public var contentType: String?
    public var count: Int64
    public var bytes: Int64
    public init(peerId: Int64?, contentType: String?, count: Int64, bytes: Int64) {
        self.peerId = peerId
        self.contentType = contentType
        self.count = count
        self.bytes = bytes
    }
}

/// What a cleanup did (or would do): totals before/after from the index, what was freed by
/// reason, peer and content type, what was skipped and why, and timings. Codable for `--json`.
public struct CleanupReport: Sendable, Codable {
    public var dryRun: Bool
    public var now: Int64
    /// Index totals before (after reconciliation) and after.
    public var before: StorageUsage
    public var after: StorageUsage
    /// Files removed (or that would be) and their bytes on disk.
    public var removed: StorageUsage
    public var expired: StorageUsage
    public var evicted: StorageUsage
    /// Rows dropped because their file had already gone.
    public var staleRows: Int64
    public var skippedLocked: Int64
    public var skippedImmune: Int64
    public var skippedExcluded: Int64
    public var failed: Int64
    /// Whether the size and count limits hold at the end (false if locked/immune/excluded
    /// resources alone exceed them).
    public var withinLimits: Bool
    public var byPeer: [CleanupUsageRow]
    public var byContentType: [CleanupUsageRow]
    public var byPeerAndContentType: [CleanupUsageRow]
    /// Up to `CleanupOptions.listVictims` victims, oldest first.
    public var victims: [CleanupVictim]
    public var reconciliation: ReconciliationReport?
    public var seconds: Double

    init(dryRun: Bool, now: Int64) {
        self.dryRun = dryRun
        self.now = now
        before = StorageUsage(); after = StorageUsage(); removed = StorageUsage()
        expired = StorageUsage(); evicted = StorageUsage()
        staleRows = 0; skippedLocked = 0; skippedImmune = 0; skippedExcluded = 0; failed = 0
        withinLimits = true
        byPeer = []; byContentType = []; byPeerAndContentType = []; victims = []
        reconciliation = nil
        seconds = 0
    }
}

/// What reconciliation found and fixed.
public struct ReconciliationReport: Sendable, Codable, Equatable {
    /// Entries looked at in the media directories.
    public var filesScanned: Int64 = 0
    /// Complete files without a row that were indexed / removed.
    public var indexedFiles = StorageUsage()
    public var removedUnindexedFiles = StorageUsage()
    /// Rows whose file was gone (dropped) and rows whose size was wrong (fixed).
    public var droppedRows = StorageUsage()
    public var resizedRows: Int64 = 0
    /// Stale or leftover `_partial` files removed, and `_partial.want` / earlier versions'
    /// `_partial.meta` files left without their partial file.
    public var removedPartials = StorageUsage()
    /// Entries of the media directories that MediaBox never produces (a name it never makes, a
    /// file directly in a location folder or in the wrong shard, a link, a FIFO), and their
    /// bytes: what a file-system walk sees that the index does not.
    public var foreignFiles: Int64 = 0
    public var foreignBytes: Int64 = 0
    /// Foreign entries removed (older than `ReconciliationOptions.foreignFileAge`).
    public var removedForeignFiles = StorageUsage()
    /// Files with a resource's name found outside their shard, moved into it (and indexed).
    public var movedIntoShards: Int64 = 0
    public init() {}

    /// Bytes and files on disk the index does not count: complete files without a row and
    /// foreign entries (what `jobrun stats` reports as "not indexed").
    public var notIndexed: StorageUsage { indexedFiles + removedUnindexedFiles + StorageUsage(bytes: foreignBytes, count: foreignFiles) }

    private enum CodingKeys: String, CodingKey {
        case filesScanned, indexedFiles, removedUnindexedFiles, droppedRows, resizedRows, removedPartials, foreignFiles, foreignBytes
        case removedForeignFiles, movedIntoShards
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        filesScanned = try c.decodeIfPresent(Int64.self, forKey: .filesScanned) ?? 0
        indexedFiles = try c.decodeIfPresent(StorageUsage.self, forKey: .indexedFiles) ?? StorageUsage()
        removedUnindexedFiles = try c.decodeIfPresent(StorageUsage.self, forKey: .removedUnindexedFiles) ?? StorageUsage()
        droppedRows = try c.decodeIfPresent(StorageUsage.self, forKey: .droppedRows) ?? StorageUsage()
        resizedRows = try c.decodeIfPresent(Int64.self, forKey: .resizedRows) ?? 0
        removedPartials = try c.decodeIfPresent(StorageUsage.self, forKey: .removedPartials) ?? StorageUsage()
        foreignFiles = try c.decodeIfPresent(Int64.self, forKey: .foreignFiles) ?? 0
        foreignBytes = try c.decodeIfPresent(Int64.self, forKey: .foreignBytes) ?? 0
        removedForeignFiles = try c.decodeIfPresent(StorageUsage.self, forKey: .removedForeignFiles) ?? StorageUsage()
        movedIntoShards = try c.decodeIfPresent(Int64.self, forKey: .movedIntoShards) ?? 0
    }
}
