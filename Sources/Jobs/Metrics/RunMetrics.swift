import Foundation

/// The outcome of a job run as exported in `jobrun_last_run_outcome{outcome="…"}`.
public enum RunOutcome: String, Sendable, Hashable, CaseIterable {
    case succeeded, failed, timedOut = "timed_out", cancelled, skipped
}

/// A kind-specific metric sample (e.g. bytes freed per peer and content type).
public struct MetricSample: Sendable, Hashable {
    /// The Prometheus `# TYPE` of the sample's family.
    public enum MetricType: String, Sendable { case counter, gauge }

    /// Name without the `jobrun_` prefix (it is added, and sanitized).
    public var name: String
    public var labels: [String: String]
    public var value: Double
    public var type: MetricType
    public var help: String?

    public init(_ name: String, labels: [String: String] = [:], value: Double, type: MetricType = .gauge, help: String? = nil) {
        self.name = name
        self.labels = labels
        self.value = value
        self.type = type
        self.help = help
    }
}

/// What one run reports to the textfile collector.
public struct RunMetrics: Sendable {
    public var job: String
    public var kind: String
    public var started: Date
    public var finished: Date
    public var outcome: RunOutcome
    /// Time of the last successful run; nil = this run if it succeeded, else the value in the
    /// previous metrics file (so a failure does not erase it).
    public var lastSuccess: Date?
    /// Kind-specific counters from this run: `["bytes": 1234]` of `prefetch-chat-media` →
    /// `jobrun_prefetch_chat_media_bytes{jobrun_job=…}`.
    public var counters: [String: Double]
    /// Kind-specific samples with extra labels.
    public var samples: [MetricSample]
    /// Runs so far by outcome (`jobrun_runs_total`), this one included; the writer fills it
    /// from the previous file.
    public var runs: [String: Double] = [:]

    public init(
        job: String, kind: String, started: Date, finished: Date, outcome: RunOutcome, lastSuccess: Date? = nil,
        counters: [String: Double] = [:], samples: [MetricSample] = []
    ) {
        self.job = job
        self.kind = kind
        self.started = started
        self.finished = finished
        self.outcome = outcome
        self.lastSuccess = lastSuccess
        self.counters = counters
        self.samples = samples
    }
}
