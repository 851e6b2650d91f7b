import Foundation

/// What a retention run removed (or, in a dry run, would remove), per peer and in total, and
/// what it did to the file.
public struct HistoryRetentionReport: Sendable {
    /// One peer's share.
    public struct PeerRow: Sendable {
        public var peer: PeerId
        public var messages: Int = 0
        public var references: Int = 0
        /// Key and value bytes of the rows removed (messages, their indexes, references).
        public var bytes: Int64 = 0
        /// Messages left in place because their media was in use.
        public var keptInUse: Int = 0
        public var lowestId: Int32 = .max
        public var highestId: Int32 = .min
        public var oldestTimestamp: Int32 = .max
        public var newestTimestamp: Int32 = .min
        /// The reasons that applied (age, count, size).
        public var reasons: Set<RetentionReason> = []

        public init(peer: PeerId) { self.peer = peer }
    }

    public var dryRun = false
    /// Peers with messages, and those left alone because excluded.
    public var peersSeen = 0
    public var peersExcluded = 0
    /// Largest first.
    public var byPeer: [PeerRow] = []
    public var messagesRemoved = 0
    public var referencesRemoved = 0
    public var bytesRemoved: Int64 = 0
    public var keptInUse = 0
    public var holesAdded = 0
    public var transactions = 0
    public var uploadItemsPruned = 0
    public var uploadPartsPruned = 0
    /// Staged files of pruned upload items (the caller removes those inside its uploads directory).
    public var prunedStagedFiles: [String] = []
    /// Database bytes (pages) before and after, and what incremental vacuum returned.
    public var databaseBytesBefore: Int64 = 0
    public var databaseBytesAfter: Int64 = 0
    public var bytesReclaimed: Int64 = 0
    public var vacuumSteps = 0
    public var walBytesAfter: Int64 = 0
    public var freePagesAfter: Int64 = 0
    /// Size passes run (each trims, reclaims and measures).
    public var sizeRounds = 0
    public var sizeLimit: Int64?
    /// Whether the database ended at or under `sizeLimit` (true without a limit).
    public var underLimit = true
    /// Dry run: the estimated database bytes a real run would free.
    public var estimatedBytesFreed: Int64 = 0

    public init() {}

    var rows: [PeerId: PeerRow] = [:]
    /// Bytes of the message rows (and id index rows) removed: the unit the size step plans in.
    public internal(set) var messageRowBytes: Int64 = 0

    mutating func add(_ peer: PeerId, reason: RetentionReason, batch: MessageTrimBatch, references: (count: Int, bytes: Int64)) {
        var row = rows[peer] ?? PeerRow(peer: peer)
        row.messages += batch.removedIds.count
        row.references += references.count
        row.bytes += batch.bytes + references.bytes
        row.keptInUse += batch.keptInUse
        if let lo = batch.removedIds.first, let hi = batch.removedIds.last {
            row.lowestId = min(row.lowestId, lo)
            row.highestId = max(row.highestId, hi)
            row.oldestTimestamp = min(row.oldestTimestamp, batch.oldestTimestamp)
            row.newestTimestamp = max(row.newestTimestamp, batch.newestTimestamp)
            row.reasons.insert(reason)
        }
        rows[peer] = row
        messagesRemoved += batch.removedIds.count
        referencesRemoved += references.count
        bytesRemoved += batch.bytes + references.bytes
        messageRowBytes += batch.rowBytes
        keptInUse += batch.keptInUse
    }

    mutating func finish() {
        byPeer = rows.values.filter { $0.messages > 0 || $0.keptInUse > 0 }
            .sorted { $0.bytes != $1.bytes ? $0.bytes > $1.bytes : $0.peer < $1.peer }
    }
}
