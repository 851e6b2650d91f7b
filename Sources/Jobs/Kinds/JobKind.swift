/// A job kind: one type that describes itself — the word job files name in `kind:`, a one-line
/// summary, its typed parameters (each declared once, as a static `Param`), the log event its
/// report goes out as, and its work.
///
/// The runner handles locks, run records, timeouts, retries, logs and metrics; a kind does its
/// work for one account and returns a `JobReport`. It must be cooperative: check
/// `Task.isCancelled` (or call `try Task.checkCancellation()`) between units of work and leave
/// the store consistent when cancelled, so a timeout or SIGTERM stops it at a checkpoint.
///
/// Adding a kind: one file with a type conforming to `JobKind` (its demo job included), one line
/// in `JobKindRegistry.shipped`, one job file in `jobs/` (see docs/architecture.md).
public protocol JobKind: Sendable {
    /// The word a job file writes in `kind:` (`time-based-cleanup`).
    static var name: String { get }
    /// One line for `jobrun list --kinds` and the docs.
    static var summary: String { get }
    /// The parameters `params:` accepts, in the order the docs list them.
    static var parameters: [any JobParameter] { get }
    /// The log event the runner writes with each account's report (`cleanup.report`): the
    /// report's counters and details as fields.
    static var reportEvent: String { get }
    /// Whether runs of this kind talk to the cloud. Their accounts need a valid `config.yaml`,
    /// checked before any store is opened or created, even when a run would have nothing to
    /// fetch (a misconfigured account is reported the day it is set up, not the day it has work).
    static var usesCloud: Bool { get }
    /// The job `jobrun demo` runs for this kind against its local cloud, and the set-up it needs
    /// first. Required, so that the demo runs every kind.
    static var demo: KindDemo { get }
    /// Rules that span several parameters (at least one limit, say), checked by every command
    /// that reads the job file — `validate` as well as `run`.
    static func check(_ params: JobParams) -> [JobFileError]

    func run(_ context: JobContext) async throws -> JobReport
}

extension JobKind {
    public static func check(_ params: JobParams) -> [JobFileError] { [] }
    public var name: String { Self.name }
    public var summary: String { Self.summary }
    public var parameters: [any JobParameter] { Self.parameters }
    public var reportEvent: String { Self.reportEvent }
    public var usesCloud: Bool { Self.usesCloud }
    public var demo: KindDemo { Self.demo }
}
