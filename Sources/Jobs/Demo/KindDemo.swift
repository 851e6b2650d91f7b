/// The job `jobrun demo` runs for one kind against its local cloud: the `params:` of a small job
/// file, and what the demo sets up first so that the run has something to show. Every kind
/// declares one (`JobKind.demo`), so the demo runs every kind of the registry.
public struct KindDemo: Sendable {
    /// What the demo does before the run.
    public enum Setup: Sendable {
        /// Nothing: the runs before it leave work enough.
        case none
        /// A few generated files queued for upload to the first synced chat, one of them secret.
        case queueUploads
        /// The cloud expires every file reference it issued, and the stored references are moved
        /// past their lifetime, as if that long had gone by.
        case expireReferences
    }

    /// The lines under `params:`, YAML without indentation.
    public var params: [String]
    public var setup: Setup

    public init(params: [String] = [], setup: Setup = .none) {
        self.params = params
        self.setup = setup
    }

    /// The demo's job file for the kind named `kind` (the job has the kind's name).
    public func jobFile(kind: String) -> String {
        var lines = ["name: \(kind)", "kind: \(kind)", "timeout: 10m"]
        if !params.isEmpty { lines += ["params:"] + params.map { "  " + $0 } }
        return lines.joined(separator: "\n") + "\n"
    }
}
