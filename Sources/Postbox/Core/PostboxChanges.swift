import Foundation

/// What one committed transaction changed, so observers (the scheduler, progress displays) can
/// react without re-scanning the store.
public struct PostboxChanges: Sendable, Equatable {
    public var updatedPeers: Set<PeerId> = []
    public var addedMessages: Set<MessageId> = []
    public var removedMessages: Set<MessageId> = []
    public var updatedSyncStates: Set<PeerId> = []
    public var updatedHoles: Set<PeerId> = []
    public var updatedMediaReferences: Set<String> = []
    public var updatedRevalidationParents: Set<MediaParent> = []
    public var updatedUploadItems: Set<Int64> = []
    public var updatedJobRuns: Set<String> = []

    public init() {}

    public var isEmpty: Bool { self == PostboxChanges() }
}
