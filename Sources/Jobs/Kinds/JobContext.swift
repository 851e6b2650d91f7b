import Foundation

/// Everything a kind gets for one run on one account.
public struct JobContext: Sendable {
    public let job: JobFile
    public let runId: String
    public let attempt: Int
    public let account: AccountContext
    public let logger: JobLogger
    /// Scratch space of this launch, created on first use (`temp.makePath()`).
    public let temp: TempBox
    /// `--dry-run`: report what would be done, change nothing.
    public let dryRun: Bool

    public var params: JobParams { job.params }
}
