/// What a `HistorySync` run did, for counters, metrics and the summary line.
public struct HistorySyncReport: Sendable, Equatable {
    /// Dialogs received from the chat list (all pages read).
    public var peersListed = 0
    /// Peers chosen for history sync (filters and `maxPeers` applied).
    public var peersSelected = 0
    /// Selected peers whose sync finished without error (up to date or updated).
    public var peersSynced = 0
    /// Peers that received new messages this run.
    public var peersUpdated = 0
    /// Peers whose sync failed with a per-peer error (e.g. `PEER_ID_INVALID`).
    public var peersFailed = 0
    /// Messages received from the cloud.
    public var messagesFetched = 0
    /// Messages written to Postbox (older than the lookback are fetched but not stored).
    public var messagesStored = 0
    /// API requests made (chat list + history pages).
    public var requests = 0
    /// History pages committed (one Postbox transaction each).
    public var pages = 0
    /// Holes left by earlier, interrupted runs that this run found.
    public var holesFound = 0
    /// Of those, holes filled completely.
    public var holesFilled = 0
    /// Holes still open over the selected peers at the end.
    public var holesOpen = 0
    /// File-reference records written (message media and avatars).
    public var referencesRecorded = 0
    /// Dry run: messages a real run would fetch at most (estimated from message ids).
    public var messagesPending = 0
    /// Per-peer failures: peer id and reason (never a secret).
    public var failures: [PeerFailure] = []

    public init() {}

    /// One peer that could not be synced.
    public struct PeerFailure: Sendable, Equatable {
        public var peerId: Int64
        public var reason: String
    }

    mutating func add(_ other: HistorySyncReport) {
        peersSynced += other.peersSynced
        peersUpdated += other.peersUpdated
        peersFailed += other.peersFailed
        messagesFetched += other.messagesFetched
        messagesStored += other.messagesStored
        requests += other.requests
        pages += other.pages
        holesFound += other.holesFound
        holesFilled += other.holesFilled
        referencesRecorded += other.referencesRecorded
        failures += other.failures
        messagesPending += other.messagesPending
    }
}
