import Foundation
import Postbox

/// One job kind's work. The runner handles locks, run records, timeouts, retries, logs and
/// metrics; a kind only does its work for one account and reports what it did.
///
/// A kind must be cooperative: check `Task.isCancelled` (or call `try Task.checkCancellation()`)
/// between units of work and leave the store consistent when cancelled, so a timeout or SIGTERM
/// stops it at a checkpoint.
public protocol JobKindRunner: Sendable {
    func run(_ context: JobContext) async throws -> JobReport
}

/// Everything a kind gets for one run on one account.
public struct JobContext: Sendable {
    public let job: JobFile
    public let runId: String
    public let attempt: Int
    public let account: AccountContext
    public let logger: JobLogger
    public let tempDirectory: URL
    /// `--dry-run`: report what would be done, change nothing.
    public let dryRun: Bool

    public var params: JobParams { job.params }
}

/// What a run did: counters for the run record, the log and the metrics file (`files`,
/// `bytes_freed`, …), labelled samples (per peer, per content type), and lines for people.
public struct JobReport: Sendable {
    public var counters: [String: Int64]
    public var samples: [MetricSample]
    public var summary: [String]
    /// A machine-readable result for `--json` (e.g. the cleanup's list of victims in a dry run).
    public var details: [String: LogValue]

    public init(counters: [String: Int64] = [:], samples: [MetricSample] = [], summary: [String] = [], details: [String: LogValue] = [:]) {
        self.counters = counters
        self.samples = samples
        self.summary = summary
        self.details = details
    }

    /// Adds `other`'s counters and samples to these (several accounts in one run).
    public mutating func merge(_ other: JobReport) {
        for (k, v) in other.counters { counters[k, default: 0] += v }
        samples += other.samples
        summary += other.summary
        for (k, v) in other.details { details[k] = v }
    }
}

/// A failure a kind reports, with the exit code it maps to and whether a retry may help.
public struct JobError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var exitCode: JobExitCode
    public var retryable: Bool
    /// What the run did before it failed (files fetched, items sent…): the runner records it and
    /// writes its counters to the metrics like a success's, so a partial failure is not a blank.
    public var report: JobReport?

    public init(_ message: String, exitCode: JobExitCode = .jobFailed, retryable: Bool = true, report: JobReport? = nil) {
        self.message = message
        self.exitCode = exitCode
        self.retryable = retryable
        self.report = report
    }

    public static func config(_ message: String) -> JobError { JobError(message, exitCode: .config, retryable: false) }
    public static func cloudUnavailable(_ message: String, report: JobReport? = nil) -> JobError {
        JobError(message, exitCode: .cloudUnavailable, retryable: true, report: report)
    }

    public var description: String { message }
}
