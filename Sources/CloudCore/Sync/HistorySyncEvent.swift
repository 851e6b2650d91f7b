/// Progress of a `HistorySync` run, for the job log. Ids and counts only, never a secret.
public enum HistorySyncEvent: Sendable, Equatable {
    /// A chat-list page was read and its peers stored.
    case dialogsPage(offset: Int, dialogs: Int, selected: Int)
    /// One peer is done: messages fetched this run and its newest synced id.
    case peerSynced(peerId: Int64, fetched: Int, maxSyncedId: Int32, firstSync: Bool)
    /// A peer's history had nothing new (no history request was needed).
    case peerUpToDate(peerId: Int64, maxSyncedId: Int32)
    /// A gap was recorded while paging (closed again by the following pages; a crash or
    /// cancellation leaves it for the next run).
    case holeRecorded(peerId: Int64, lower: Int32, upper: Int32)
    /// A gap left by an earlier run was filled.
    case holeFilled(peerId: Int64, lower: Int32, upper: Int32)
    /// A peer failed; the others go on.
    case peerFailed(peerId: Int64, reason: String)
}
