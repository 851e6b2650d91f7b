/// The type of one job parameter, as declared by a kind's schema.
public indirect enum ParamType: Sendable, Hashable, CustomStringConvertible {
    case string
    case int
    case double
    case bool
    /// `30s`, `5m`, `1h30m`, `2d` (see `ConfigDuration`).
    case duration
    /// `10MB`, `1GiB`, or a bare integer in bytes (see `ByteSize`).
    case byteSize
    /// One of a fixed set of words.
    case oneOf([String])
    case list(ParamType)
    /// A mapping whose keys come from a fixed set, each value of one type.
    case map(keys: [String], value: ParamType)

    public var description: String {
        switch self {
        case .string: return "a string"
        case .int: return "an integer"
        case .double: return "a number"
        case .bool: return "true or false"
        case .duration: return ConfigDuration.expected
        case .byteSize: return ByteSize.expected
        case .oneOf(let words): return "one of " + words.joined(separator: ", ")
        case .list(let element): return "a list of \(element.shortName)"
        case .map(let keys, let value): return "a mapping of \(keys.joined(separator: ", ")) to \(value.shortName)"
        }
    }

    /// A short name for lists and maps (`durations`, `sizes`, …).
    var shortName: String {
        switch self {
        case .string: return "strings"
        case .int: return "integers"
        case .double: return "numbers"
        case .bool: return "booleans"
        case .duration: return "durations"
        case .byteSize: return "sizes"
        case .oneOf(let words): return "words (" + words.joined(separator: ", ") + ")"
        case .list: return "lists"
        case .map: return "mappings"
        }
    }
}

/// A validated parameter value (defaults filled in).
public indirect enum ParamValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case duration(Duration)
    case bytes(Int64)
    case list([ParamValue])
    case map([String: ParamValue])

    public var description: String {
        switch self {
        case .string(let value): return value
        case .int(let value): return String(value)
        case .double(let value): return String(value)
        case .bool(let value): return String(value)
        case .duration(let value): return ConfigDuration.format(value)
        case .bytes(let value): return ByteSize.format(value)
        case .list(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .map(let values):
            return "{" + values.keys.sorted().map { "\($0): \(values[$0]!.description)" }.joined(separator: ", ") + "}"
        }
    }
}

/// Declaration of one parameter: name, type, whether required, default, allowed range, and a
/// one-line doc (the kinds' engineers and `docs/job-files.md` read these).
public struct ParamSpec: Sendable, Hashable {
    public var name: String
    public var type: ParamType
    public var required: Bool
    public var defaultValue: ParamValue?
    /// Inclusive bounds for numbers; for durations in seconds, for sizes in bytes; applied to
    /// list and map elements too.
    public var range: ClosedRange<Double>?
    public var doc: String

    public init(
        _ name: String, _ type: ParamType, required: Bool = false, default defaultValue: ParamValue? = nil,
        range: ClosedRange<Double>? = nil, doc: String
    ) {
        self.name = name
        self.type = type
        self.required = required
        self.defaultValue = defaultValue
        self.range = range
        self.doc = doc
    }
}

/// The parameters a job kind accepts, as its validator sees them. Unknown keys, wrong types,
/// out-of-range values and missing required parameters are rejected with positions.
public struct JobParamsSchema: Sendable, Hashable {
    public var kind: String
    public var params: [ParamSpec]

    public init(kind: String, params: [ParamSpec]) {
        self.kind = kind
        self.params = params
    }

    /// The schema of a kind: its name and its declared parameters.
    public init(_ kind: any JobKind) {
        self.init(kind: kind.name, params: kind.parameters.map(\.spec))
    }

    public func spec(named name: String) -> ParamSpec? { params.first { $0.name == name } }

    /// Validates a `params:` node (nil or null = empty) and collects every error.
    /// `fallback` is where to report a missing parameter when there is no `params:` node.
    public func validate(_ node: ConfigNode?, fallback: SourcePosition) -> (JobParams, [JobFileError]) {
        var errors: [JobFileError] = []
        var values: [String: ParamValue] = [:]
        var positions: [String: SourcePosition] = [:]
        var entries: [ConfigNode.Entry] = []
        var where_ = fallback
        if let node, !node.isNull {
            where_ = node.position
            if case .mapping(let list) = node.value {
                entries = list
            } else {
                errors.append(
                    JobFileError(
                        node.position, "params must be a mapping, found \(node.typeName)",
                        expected: "a mapping of parameters for kind \(kind)"))
            }
        }
        for entry in entries {
            guard let spec = spec(named: entry.key) else {
                errors.append(
                    JobFileError(
                        entry.keyPosition,
                        "unknown parameter \(ConfigNode.quotedKey(entry.key)) for kind \(kind)\(suggestion(for: entry.key, among: params.map(\.name)))",
                        expected: params.isEmpty ? "no parameters" : "one of " + params.map(\.name).joined(separator: ", ")))
                continue
            }
            positions[spec.name] = entry.value.position
            if entry.value.isNull {
                if spec.required {
                    errors.append(JobFileError(entry.value.position, "parameter '\(spec.name)' must have a value", expected: spec.type.description))
                }
                continue
            }
            if let value = ParamDecoder.decode(entry.value, as: spec.type, range: spec.range, name: spec.name, errors: &errors) {
                if case .map(let given) = value, case .map(let defaults)? = spec.defaultValue {
                    // A partial map overrides only the keys it names.
                    values[spec.name] = .map(defaults.merging(given) { _, new in new })
                } else {
                    values[spec.name] = value
                }
            }
        }
        for spec in params where values[spec.name] == nil && positions[spec.name] == nil {
            if spec.required {
                errors.append(
                    JobFileError(
                        where_, "missing required parameter '\(spec.name)' for kind \(kind)",
                        expected: "\(spec.name): \(spec.type)"))
            } else if let value = spec.defaultValue {
                values[spec.name] = value
            }
        }
        for spec in params where values[spec.name] == nil && positions[spec.name] != nil {
            if let value = spec.defaultValue { values[spec.name] = value }  // explicit null: the default applies
        }
        return (JobParams(kind: kind, values: values, positions: positions, fallback: where_), errors)
    }
}

/// Suggests a close key name (`did you mean 'timeout'?`), by edit distance.
func suggestion(for key: String, among names: [String]) -> String {
    func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
    let best = names.map { ($0, distance(key, $0)) }.min { $0.1 < $1.1 }
    if let best, best.1 <= max(1, min(3, best.0.count / 3)) { return "; did you mean '\(best.0)'?" }
    return ""
}
