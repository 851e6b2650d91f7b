import Foundation

/// What history retention keeps and drops, and how it works through the store.
///
/// A message goes when it is older than `maxAge`, or beyond the newest `maxMessagesPerPeer` of
/// its peer, or — oldest first across every peer — while the database is over `sizeLimit`.
/// Whatever the reason, the newest `keepNewest` messages of every peer stay, as do the messages
/// of excluded peers and classes and every message `inUse` claims.
public struct HistoryRetentionPolicy: Sendable {
    /// Drop messages older than this many seconds (nil: no age limit).
    public var maxAge: Int64?
    /// Keep at most this many messages per peer (nil: no count limit).
    public var maxMessagesPerPeer: Int?
    /// Bring the database under this many bytes (pages of the file; the WAL is bounded apart).
    public var sizeLimit: Int64?
    /// Messages of every peer that are never dropped, newest first.
    public var keepNewest: Int
    public var excludedPeers: Set<PeerId> = []
    /// Peer categories whose history is never dropped.
    public var excludedCategories: Set<PeerCategory> = []
    /// Sent and failed upload items (and their acknowledged parts) older than this many seconds
    /// are removed (nil: kept).
    public var uploadRetention: Int64?
    /// Messages visited per write transaction: bounds how long another writer waits.
    public var batchSize: Int
    /// Free space returned to the file system per step (one short write transaction each).
    public var vacuumStepBytes: Int64
    /// The WAL is cut back to this size after checkpoints.
    public var walSizeLimit: Int64
    /// Report what would be dropped, change nothing.
    public var dryRun: Bool = false
    /// Dry run: list at most this many per-peer entries.
    public var listLimit: Int = 1_000
    /// Unix seconds "now" for `maxAge` and `uploadRetention`.
    public var now: Int64 = Int64(Date().timeIntervalSince1970)

    /// The working limits have no defaults here: the `history-retention` kind's parameters are
    /// where they are written.
    public init(keepNewest: Int, batchSize: Int, vacuumStepBytes: Int64, walSizeLimit: Int64) {
        self.keepNewest = keepNewest
        self.batchSize = batchSize
        self.vacuumStepBytes = vacuumStepBytes
        self.walSizeLimit = walSizeLimit
    }
}

/// Why retention drops a message.
public enum RetentionReason: String, Sendable, CaseIterable {
    /// Older than `maxAge`.
    case age
    /// Beyond `maxMessagesPerPeer`.
    case count
    /// Oldest across peers while the database is over `sizeLimit`.
    case size
}
