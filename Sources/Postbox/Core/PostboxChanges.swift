import Foundation

/// What one committed transaction changed, so observers (the scheduler, progress displays) can
/// react without re-scanning the store.
public struct PostboxChanges: Sendable, Equatable {
    public var updatedPeers: Set<PeerId> = []
    /// Peers whose history gained or lost messages, with how many were added (a bulk sync
    /// adds millions: the record stays per peer, not per message).
    public var addedMessages: [PeerId: Int] = [:]
    public var removedMessages: [PeerId: Int] = [:]
    public var updatedSyncStates: Set<PeerId> = []
    public var updatedHoles: Set<PeerId> = []
    public var updatedMediaReferences: Set<String> = []
    public var updatedRevalidationParents: Set<MediaParent> = []
    public var updatedUploadItems: Set<Int64> = []
    public var updatedJobRuns: Set<String> = []

    public init() {}

    /// Field by field (cheaper than building an empty record to compare with, once per
    /// transaction): a new field must be added here too.
    public var isEmpty: Bool {
        updatedPeers.isEmpty && addedMessages.isEmpty && removedMessages.isEmpty && updatedSyncStates.isEmpty
            && updatedHoles.isEmpty && updatedMediaReferences.isEmpty && updatedRevalidationParents.isEmpty
            && updatedUploadItems.isEmpty && updatedJobRuns.isEmpty
    }
}
