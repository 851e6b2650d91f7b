/// A typed handle on one parameter of a job kind: its declaration (name, type, default, allowed
/// range, one-line doc) and the type its validated value is read as.
///
/// A kind declares each parameter once, as a static `Param` (or `OptionalParam`), lists them in
/// its `parameters`, and reads them with `context.params[Self.maxSize]`. A misspelt key does not
/// compile, a required parameter is not optional at its use, and the default lives in one place.
public protocol JobParameter: Sendable {
    var spec: ParamSpec { get }
}

/// A parameter that always has a value after validation: it has a default, or it is required.
public struct Param<Value: ParamConvertible>: JobParameter {
    public let spec: ParamSpec

    /// A parameter with a default; `environment` names the variable that gives it when the
    /// file does not.
    public init(
        _ name: String, default value: Value, range: ClosedRange<Double>? = nil, environment: String? = nil, doc: String
    ) {
        spec = ParamSpec(name, Value.paramType, default: value.paramValue, range: range, environment: environment, doc: doc)
    }

    /// A parameter every file must give.
    public static func required(_ name: String, range: ClosedRange<Double>? = nil, environment: String? = nil, doc: String) -> Param {
        Param(spec: ParamSpec(name, Value.paramType, required: true, range: range, environment: environment, doc: doc))
    }

    /// A set of words restricted to `allowed` (a subset of the word type's cases).
    public init<W: ParamWord>(_ name: String, default value: Value, allowed: [W], doc: String) where Value == Set<W> {
        spec = ParamSpec(name, .list(W.paramType(allowed)), default: value.paramValue, doc: doc)
    }

    /// A mapping whose keys are restricted to `allowed` (a subset of the word type's cases).
    public init<W: ParamWord, V: ParamConvertible>(
        _ name: String, default value: Value, allowed: [W], range: ClosedRange<Double>? = nil, doc: String
    ) where Value == [W: V] {
        spec = ParamSpec(
            name, .map(keys: allowed.map(\.word), value: V.paramType), default: value.paramValue, range: range, doc: doc)
    }

    private init(spec: ParamSpec) { self.spec = spec }

    /// The same parameter, still read under its former name (with a deprecation warning).
    public func formerly(_ name: String) -> Param {
        var spec = spec
        spec.formerName = name
        return Param(spec: spec)
    }

    /// The same duration parameter, still reading a bare number as seconds (with a deprecation
    /// warning).
    public func acceptingBareSeconds() -> Param {
        var spec = spec
        spec.acceptsBareSeconds = true
        return Param(spec: spec)
    }

    /// The declared default (nil for a required parameter).
    public var defaultValue: Value? { spec.defaultValue.flatMap(Value.init(paramValue:)) }
}

/// A parameter that may be left out: reading it gives nil then ("no limit", "unlimited").
public struct OptionalParam<Value: ParamConvertible>: JobParameter {
    public let spec: ParamSpec

    public init(_ name: String, range: ClosedRange<Double>? = nil, environment: String? = nil, doc: String) {
        spec = ParamSpec(name, Value.paramType, range: range, environment: environment, doc: doc)
    }

    private init(spec: ParamSpec) { self.spec = spec }

    /// The same duration parameter, still reading a bare number as seconds (with a deprecation
    /// warning).
    public func acceptingBareSeconds() -> OptionalParam {
        var spec = spec
        spec.acceptsBareSeconds = true
        return OptionalParam(spec: spec)
    }
}

/// A nested section (`retry.backoff`, `objectStorage.sharedMedia`): its keys are the section
/// type's own parameters, and reading it gives the section's validated values.
public struct SectionParam<Section: ConfigSection>: JobParameter {
    public private(set) var spec: ParamSpec

    /// A section whose keys take their defaults when it is left out.
    public init(_ name: String, doc: String) {
        spec = ParamSpec(name, .section(SectionSchema(Section.self)), doc: doc)
    }

    /// A section that may be left out altogether: reading it gives nil then.
    public static func optional(_ name: String, doc: String) -> SectionParam {
        var param = SectionParam(name, doc: doc)
        param.spec.optionalSection = true
        return param
    }
}

/// A Swift type a parameter can be read as, with the `ParamType` that validates it.
public protocol ParamConvertible: Sendable {
    static var paramType: ParamType { get }
    init?(paramValue: ParamValue)
    var paramValue: ParamValue { get }
}

/// An enum whose cases a job file names by word (`private`, `photo`, `stickerSet`…): the word
/// list of a parameter comes from the cases, so it cannot drift from the code that uses it.
public protocol ParamWord: ParamConvertible, Hashable, CaseIterable {
    /// The word a job file writes for this case.
    var word: String { get }
}

extension ParamWord {
    public static var paramType: ParamType { paramType(Array(allCases)) }

    static func paramType(_ cases: [Self]) -> ParamType { .oneOf(cases.map(\.word)) }

    public init?(paramValue: ParamValue) {
        guard case .string(let text) = paramValue, let match = Self.allCases.first(where: { $0.word == text }) else {
            return nil
        }
        self = match
    }

    public var paramValue: ParamValue { .string(word) }
}

/// A number of bytes, written in a job file as `10MB`, `1GiB` or a bare integer.
public struct ByteCount: ParamConvertible, Hashable, Comparable {
    public var bytes: Int64

    public init(_ bytes: Int64) { self.bytes = bytes }

    public static func mebibytes(_ n: Int64) -> ByteCount { ByteCount(n << 20) }
    public static func gibibytes(_ n: Int64) -> ByteCount { ByteCount(n << 30) }

    public static var paramType: ParamType { .byteSize }
    public init?(paramValue: ParamValue) {
        guard case .bytes(let bytes) = paramValue else { return nil }
        self.bytes = bytes
    }
    public var paramValue: ParamValue { .bytes(bytes) }
    public static func < (a: ByteCount, b: ByteCount) -> Bool { a.bytes < b.bytes }
}

extension Int: ParamConvertible {
    public static var paramType: ParamType { .int }
    public init?(paramValue: ParamValue) {
        guard case .int(let value) = paramValue else { return nil }
        self = Int(value)
    }
    public var paramValue: ParamValue { .int(Int64(self)) }
}

extension Int64: ParamConvertible {
    public static var paramType: ParamType { .int }
    public init?(paramValue: ParamValue) {
        guard case .int(let value) = paramValue else { return nil }
        self = value
    }
    public var paramValue: ParamValue { .int(self) }
}

extension Double: ParamConvertible {
    public static var paramType: ParamType { .double }
    public init?(paramValue: ParamValue) {
        switch paramValue {
        case .double(let value): self = value
        case .int(let value): self = Double(value)
        default: return nil
        }
    }
    public var paramValue: ParamValue { .double(self) }
}

extension Bool: ParamConvertible {
    public static var paramType: ParamType { .bool }
    public init?(paramValue: ParamValue) {
        guard case .bool(let value) = paramValue else { return nil }
        self = value
    }
    public var paramValue: ParamValue { .bool(self) }
}

extension String: ParamConvertible {
    public static var paramType: ParamType { .string }
    public init?(paramValue: ParamValue) {
        guard case .string(let value) = paramValue else { return nil }
        self = value
    }
    public var paramValue: ParamValue { .string(self) }
}

extension Duration: ParamConvertible {
    public static var paramType: ParamType { .duration }
    public init?(paramValue: ParamValue) {
        guard case .duration(let value) = paramValue else { return nil }
        self = value
    }
    public var paramValue: ParamValue { .duration(self) }

    /// Whole seconds (parameters are validated in seconds).
    public var wholeSeconds: Int64 { components.seconds }
}

extension Array: ParamConvertible where Element: ParamConvertible {
    public static var paramType: ParamType { .list(Element.paramType) }
    public init?(paramValue: ParamValue) {
        guard case .list(let items) = paramValue else { return nil }
        var values: [Element] = []
        values.reserveCapacity(items.count)
        for item in items {
            guard let value = Element(paramValue: item) else { return nil }
            values.append(value)
        }
        self = values
    }
    public var paramValue: ParamValue { .list(map(\.paramValue)) }
}

extension Set: ParamConvertible where Element: ParamWord {
    public static var paramType: ParamType { .list(Element.paramType) }
    public init?(paramValue: ParamValue) {
        guard let list = [Element](paramValue: paramValue) else { return nil }
        self = Set(list)
    }
    /// In the order of the word type's cases, so defaults print the same way every time.
    public var paramValue: ParamValue { .list(Element.allCases.filter(contains).map(\.paramValue)) }
}

extension Dictionary: ParamConvertible where Key: ParamWord, Value: ParamConvertible {
    public static var paramType: ParamType { .map(keys: Key.allCases.map(\.word), value: Value.paramType) }
    public init?(paramValue: ParamValue) {
        guard case .map(let items) = paramValue else { return nil }
        var values: [Key: Value] = [:]
        for (word, item) in items {
            guard let key = Key(paramValue: .string(word)), let value = Value(paramValue: item) else { return nil }
            values[key] = value
        }
        self = values
    }
    public var paramValue: ParamValue {
        .map(Dictionary<String, ParamValue>(uniqueKeysWithValues: map { ($0.key.word, $0.value.paramValue) }))
    }
}

extension ClosedRange where Bound == Double {
    /// An integer range as a parameter's range: `range: .init(CloudRetryPolicy.maxAttemptsRange)`.
    public init<Integer: BinaryInteger>(_ integers: ClosedRange<Integer>) {
        self = Double(integers.lowerBound)...Double(integers.upperBound)
    }
}
