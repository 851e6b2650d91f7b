/// The job kinds a build can run, by the name job files give in `kind:`. Validation, `jobrun
/// list`, the parameter tables in the docs and the runner all read this one list.
public struct JobKindRegistry: Sendable {
    /// The kinds in the order `jobrun list --kinds` and the docs show them.
    public let kinds: [any JobKind]

    public init(_ kinds: [any JobKind]) {
        var seen: Set<String> = []
        for kind in kinds { precondition(seen.insert(kind.name).inserted, "job kind \(kind.name) registered twice") }
        self.kinds = kinds
    }

    /// Every kind this product ships.
    public static let shipped = JobKindRegistry([
        SyncHistoryJob(),
        PrefetchChatMediaJob(),
        GenerateRepresentationsJob(),
        RevalidateReferencesJob(),
        UploadQueueJob(),
        TimeBasedCleanupJob(),
        HistoryRetentionJob(),
    ])

    public func kind(named name: String) -> (any JobKind)? { kinds.first { $0.name == name } }

    public var names: [String] { kinds.map(\.name) }

    /// These kinds plus `kind` (replacing one of the same name): how tests and embedders add theirs.
    public func adding(_ kind: any JobKind) -> JobKindRegistry {
        JobKindRegistry(kinds.filter { $0.name != kind.name } + [kind])
    }
}
