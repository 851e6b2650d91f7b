/// The stable id of every Postbox table: the SQLite table `t<id>`. Part of the on-disk
/// contract (docs/storage-format.md): never renumber or reuse an id; add new ones at the end
/// and migrate.
public enum PostboxTableId: Int32, CaseIterable, Sendable {
    case metadata = 0
    case peers = 1
    case messages = 2
    case messageIdIndex = 3
    case messageMediaIndex = 4
    case peerSyncState = 5
    case historyHoles = 6
    case mediaReferences = 7
    case mediaReferencesByObtainedAt = 8
    case mediaReferencesByParent = 9
    case revalidationLeases = 10
    case uploadQueue = 11
    case uploadParts = 12
    case jobRuns = 13
    case sharedMediaTier = 14
    case uploadQueueOpen = 15

    public var keyType: ValueBoxKeyType {
        switch self {
        case .metadata, .peers, .peerSyncState, .uploadQueue, .uploadQueueOpen: return .int64
        default: return .binary
        }
    }

    public var table: ValueBoxTable { ValueBoxTable(id: rawValue, keyType: keyType) }
}
