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
