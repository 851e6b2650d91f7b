/// What a run did: counters for the run record, the log and the metrics file (`files`,
/// `bytes_freed`, …), labelled samples (per peer, per content type), lines for people, and a
/// machine-readable result. The runner turns it into the kind's report log line, the run record,
/// the metrics file and `--json` output: a kind builds it in one place and nowhere else.
public struct JobReport: Sendable {
    public var counters: [String: Int64]
    public var samples: [MetricSample]
    public var summary: [String]
    /// A machine-readable result for `--json` and the report log line (e.g. the cleanup's list
    /// of victims in a dry run).
    public var details: [String: LogValue]
    /// Counters the metrics file leaves out because a labelled sample already carries them
    /// (`refreshed_photo` is `revalidation_parents{parent_kind="photo",outcome="refreshed"}`);
    /// they stay in the run record, the log line and the summary.
    public var sampledCounters: Set<String> = []

    public init(
        counters: [String: Int64] = [:], samples: [MetricSample] = [], summary: [String] = [],
        details: [String: LogValue] = [:]
    ) {
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
        sampledCounters.formUnion(other.sampledCounters)
    }

    /// The fields of the kind's report log line: every counter, then the details.
    public var logFields: [String: LogValue] {
        var fields = counters.mapValues { LogValue.int($0) }
        for (k, v) in details { fields[k] = v }
        return fields
    }
}
