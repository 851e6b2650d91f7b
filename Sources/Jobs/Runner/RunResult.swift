import Foundation
import Postbox

/// How one `JobRunner.run` ended: what the process should exit with and what to show.
public struct RunResult: Sendable {
    public var job: String
    public var runId: String
    public var outcome: RunOutcome
    public var exitCode: JobExitCode
    public var attempts: Int
    public var started: Date
    public var finished: Date
    public var report: JobReport
    /// Why it did not succeed (nil on success).
    public var message: String?
    /// A `--dry-run`: no metrics file was written and the record says so.
    public var dryRun = false

    public var duration: TimeInterval { finished.timeIntervalSince(started) }

    /// Records how the run ended: its outcome, exit code and message.
    mutating func end(_ outcome: RunOutcome, _ exitCode: JobExitCode, _ message: String?) {
        self.outcome = outcome
        self.exitCode = exitCode
        self.message = message
    }
}

extension RunOutcome {
    /// The run-history form of an outcome.
    var record: JobRunRecord.Outcome {
        switch self {
        case .succeeded: return .succeeded
        case .failed: return .failed
        case .timedOut: return .timedOut
        case .cancelled: return .cancelled
        case .skipped: return .skipped
        }
    }
}
