/// Conversions from job-file values to log fields, so a run can log its effective parameters.
/// Logged through a `JobLogger`, they are redacted like any other field.
extension LogValue {
    public init(_ value: ParamValue) {
        switch value {
        case .string(let text): self = .string(text)
        case .int(let number): self = .int(number)
        case .double(let number): self = .double(number)
        case .bool(let flag): self = .bool(flag)
        case .duration(let duration): self = .string(ConfigDuration.format(duration))
        case .bytes(let bytes): self = .int(bytes)
        case .list(let items): self = .array(items.map(LogValue.init))
        case .map(let items): self = .object(items.mapValues(LogValue.init))
        case .section(let values): self.init(values)
        }
    }

    /// All validated parameters of a job as one object (`log.info("run.params", ["params": .init(job.params)])`).
    public init(_ params: JobParams) {
        self = .object(params.values.mapValues(LogValue.init))
    }
}
