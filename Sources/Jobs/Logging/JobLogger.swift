import Foundation

/// A logger value carrying job/run context, safe to copy into concurrent tasks: every copy writes
/// through the same `LogSink`. Fields are redacted per `LogRedaction` before they are written.
///
///     let log = JobLogger(sink: sink).with(job: "prefetch", run: runID)
///     log.info("run.started", ["accounts": [0]])
public struct JobLogger: Sendable {
    public let sink: LogSink
    public var job: String?
    public var run: String?
    /// Fields added to every event of this logger (e.g. `account`).
    public var metadata: [String: LogValue]

    public init(sink: LogSink, job: String? = nil, run: String? = nil, metadata: [String: LogValue] = [:]) {
        self.sink = sink
        self.job = job
        self.run = run
        self.metadata = metadata
    }

    /// A copy for one job run.
    public func with(job: String?, run: String?) -> JobLogger {
        JobLogger(sink: sink, job: job, run: run, metadata: metadata)
    }

    /// A copy with extra fields on every event.
    public func with(_ fields: [String: LogValue]) -> JobLogger {
        JobLogger(sink: sink, job: job, run: run, metadata: metadata.merging(fields) { _, new in new })
    }

    public func log(_ level: LogLevel, _ event: String, _ fields: [String: LogValue] = [:], date: Date = Date()) {
        let all = metadata.isEmpty ? fields : metadata.merging(fields) { _, new in new }
        sink.write(level: level, job: job, run: run, event: event, fields: all, date: date)
    }

    public func debug(_ event: String, _ fields: [String: LogValue] = [:]) { log(.debug, event, fields) }
    public func info(_ event: String, _ fields: [String: LogValue] = [:]) { log(.info, event, fields) }
    public func notice(_ event: String, _ fields: [String: LogValue] = [:]) { log(.notice, event, fields) }
    public func warning(_ event: String, _ fields: [String: LogValue] = [:]) { log(.warning, event, fields) }
    public func error(_ event: String, _ fields: [String: LogValue] = [:]) { log(.error, event, fields) }
}
