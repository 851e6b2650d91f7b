import Jobs

/// The job kinds this build of `jobrun` can run.
enum ShippedKinds {
    static let registry = JobKindRegistry([
        .timeBasedCleanup: TimeBasedCleanupJob(),
        .syncHistory: SyncHistoryJob(),
        .uploadQueue: UploadQueueJob(),
        .revalidateReferences: RevalidateReferencesJob(),
        .prefetchChatMedia: PrefetchChatMediaJob(),
        .historyRetention: HistoryRetentionJob(),
    ])
}
