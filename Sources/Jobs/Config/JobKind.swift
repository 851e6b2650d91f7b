/// The kinds of job a job file can name in `kind:`. Each kind declares its `params` schema.
public enum JobKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case syncHistory = "sync-history"
    case prefetchChatMedia = "prefetch-chat-media"
    case revalidateReferences = "revalidate-references"
    case uploadQueue = "upload-queue"
    case timeBasedCleanup = "time-based-cleanup"
    case historyRetention = "history-retention"

    public var description: String { rawValue }

    /// The parameters this kind accepts under `params:` (see `KindSchemas.swift`).
    public var paramsSchema: JobParamsSchema {
        switch self {
        case .syncHistory: return .syncHistory
        case .prefetchChatMedia: return .prefetchChatMedia
        case .revalidateReferences: return .revalidateReferences
        case .uploadQueue: return .uploadQueue
        case .timeBasedCleanup: return .timeBasedCleanup
        case .historyRetention: return HistoryRetentionJob.schema
        }
    }

    static var expectedList: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
