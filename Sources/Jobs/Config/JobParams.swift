/// A kind's validated parameters, or a section's validated keys (defaults filled in), with the
/// source position of each one given in the file, so semantic checks can still report
/// `file:line:column`.
///
/// Read them through the typed keys: `params[TimeBasedCleanupJob.maxSize]`. Reading a key the
/// kind or section does not list in its `parameters` stops the program: it would silently be
/// its default.
public struct JobParams: Sendable, Hashable {
    public var kind: String
    public var values: [String: ParamValue]
    public var positions: [String: SourcePosition]
    /// Where the `params:` mapping is (or the job file's root when absent).
    public var fallback: SourcePosition
    /// The names the kind or section declares (nil: not checked).
    public var declared: Set<String>?

    public init(
        kind: String, values: [String: ParamValue], positions: [String: SourcePosition] = [:], fallback: SourcePosition,
        declared: Set<String>? = nil
    ) {
        self.kind = kind
        self.values = values
        self.positions = positions
        self.fallback = fallback
        self.declared = declared
    }

    private func checkDeclared(_ param: any JobParameter) {
        if let declared, !declared.contains(param.spec.name) {
            preconditionFailure("'\(param.spec.name)' is read from \(kind) but is not in its parameters")
        }
    }

    /// The value of a parameter that always has one (a default, or required and validated).
    public subscript<Value>(_ param: Param<Value>) -> Value {
        checkDeclared(param)
        if let value = values[param.spec.name].flatMap(Value.init(paramValue:)) { return value }
        if let value = param.defaultValue { return value }
        preconditionFailure("parameter '\(param.spec.name)' of kind \(kind) has no value: it is not in the kind's parameters")
    }

    /// The value of an optional parameter, nil when the job file leaves it out.
    public subscript<Value>(_ param: OptionalParam<Value>) -> Value? {
        checkDeclared(param)
        return values[param.spec.name].flatMap(Value.init(paramValue:))
    }

    /// A nested section's values (its defaults when the file leaves it out).
    public subscript<Section>(_ param: SectionParam<Section>) -> JobParams {
        checkDeclared(param)
        if case .section(let values)? = values[param.spec.name] { return values }
        return Section.validate(nil, fallback: fallback).0
    }

    /// An optional section's values, nil when neither the file nor the environment gives it.
    public func section<Section>(_ param: SectionParam<Section>) -> JobParams? {
        checkDeclared(param)
        if case .section(let values)? = values[param.spec.name] { return values }
        return nil
    }

    /// Where `param` was written, or the `params:` position when it came from a default.
    public func position(of param: any JobParameter) -> SourcePosition { positions[param.spec.name] ?? fallback }

    /// An error about a parameter, positioned where it was written: for a kind's own checks.
    public func error(_ param: any JobParameter, _ message: String, expected: String? = nil) -> JobFileError {
        JobFileError(position(of: param), message, expected: expected)
    }
}
