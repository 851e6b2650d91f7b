/// A kind's validated parameters (defaults filled in), with the source position of each one
/// given in the file, so a kind's own semantic checks can still report `file:line:column`.
///
/// Read them through the kind's typed keys: `params[TimeBasedCleanupJob.maxSize]`.
public struct JobParams: Sendable, Hashable {
    public var kind: String
    public var values: [String: ParamValue]
    public var positions: [String: SourcePosition]
    /// Where the `params:` mapping is (or the job file's root when absent).
    public var fallback: SourcePosition

    public init(
        kind: String, values: [String: ParamValue], positions: [String: SourcePosition] = [:], fallback: SourcePosition
    ) {
        self.kind = kind
        self.values = values
        self.positions = positions
        self.fallback = fallback
    }

    /// The value of a parameter that always has one (a default, or required and validated).
    public subscript<Value>(_ param: Param<Value>) -> Value {
        if let value = values[param.spec.name].flatMap(Value.init(paramValue:)) { return value }
        if let value = param.defaultValue { return value }
        preconditionFailure("parameter '\(param.spec.name)' of kind \(kind) has no value: it is not in the kind's parameters")
    }

    /// The value of an optional parameter, nil when the job file leaves it out.
    public subscript<Value>(_ param: OptionalParam<Value>) -> Value? {
        values[param.spec.name].flatMap(Value.init(paramValue:))
    }

    /// Where `param` was written, or the `params:` position when it came from a default.
    public func position(of param: any JobParameter) -> SourcePosition { positions[param.spec.name] ?? fallback }

    /// An error about a parameter, positioned where it was written: for a kind's own checks.
    public func error(_ param: any JobParameter, _ message: String, expected: String? = nil) -> JobFileError {
        JobFileError(position(of: param), message, expected: expected)
    }
}
