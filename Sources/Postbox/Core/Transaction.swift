import Foundation

/// The one way to touch Postbox's tables. Valid only inside the body of
/// `Postbox.transaction`/`read`: any use after the body returns throws
/// `PostboxError.transactionFinished`, and a body that throws rolls everything back.
public final class Transaction {
    private let postbox: Postbox
    private let state: TransactionState

    init(postbox: Postbox, state: TransactionState) {
        self.postbox = postbox
        self.state = state
    }

    /// True while the body runs; false once committed or rolled back.
    public var isActive: Bool { state.isActive }
    public var isWrite: Bool { state.isWrite }

    private func table<T: Table>(_ t: T) throws -> T {
        try t.checkRead()
        return t
    }

    public var metadata: MetadataTable { get throws { try table(postbox.metadataTable) } }
    public var peers: PeerTable { get throws { try table(postbox.peerTable) } }
    public var messages: MessageHistoryTable { get throws { try table(postbox.messageHistoryTable) } }
    public var syncStates: PeerSyncStateTable { get throws { try table(postbox.peerSyncStateTable) } }
    public var holes: HistoryHoleTable { get throws { try table(postbox.historyHoleTable) } }
    public var mediaReferences: MediaReferenceTable { get throws { try table(postbox.mediaReferenceTable) } }
    public var revalidationLeases: RevalidationLeaseTable { get throws { try table(postbox.revalidationLeaseTable) } }
    public var uploadQueue: UploadQueueTable { get throws { try table(postbox.uploadQueueTable) } }
    public var jobRuns: JobRunTable { get throws { try table(postbox.jobRunTable) } }
    public var sharedMediaTier: SharedMediaTierTable { get throws { try table(postbox.sharedMediaTierTable) } }

    /// The changes recorded so far in this transaction.
    public var changes: PostboxChanges { state.changes }
}
