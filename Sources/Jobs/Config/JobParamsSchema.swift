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
    /// A nested section with parameters of its own.
    case section(SectionSchema)
    /// A job kind's `params:`: a mapping the kind named by `kind:` validates.
    case kindParameters
    /// A value of a shape of its own (a DC map, a URL), decoded by its own function.
    case custom(CustomParamType)

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
        case .section(let section): return "a mapping with " + section.params.map(\.name).joined(separator: ", ")
        case .kindParameters: return "a mapping of the kind's parameters"
        case .custom(let custom): return custom.description
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
        case .map, .section, .kindParameters: return "mappings"
        case .custom(let custom): return custom.name + "s"
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
    /// A nested section's validated values.
    case section(JobParams)

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
        case .section(let values): return ParamValue.map(values.values).description
        }
    }
}

/// Declaration of one parameter: name, type, whether required, default, allowed range, the
/// environment variable that gives it (if any), and a one-line doc (the kinds' engineers,
/// `docs/job-files.md` and `docs/configuration.md` read these).
public struct ParamSpec: Sendable, Hashable {
    public var name: String
    public var type: ParamType
    public var required: Bool
    public var defaultValue: ParamValue?
    /// Inclusive bounds for numbers; for durations in seconds, for sizes in bytes; applied to
    /// list and map elements too.
    public var range: ClosedRange<Double>?
    /// The variable that gives the value when the file does not (`JOBRUN_S3_BUCKET`).
    public var environment: String?
    /// The key's former name, still read (with a deprecation warning) for one release.
    public var formerName: String?
    /// Whether a bare number is still read as seconds (a duration's former spelling), with a
    /// deprecation warning.
    public var acceptsBareSeconds: Bool = false
    /// For a nested section: whether it may be left out altogether (nil when absent) rather
    /// than taking its keys' defaults.
    public var optionalSection: Bool = false
    public var doc: String

    public init(
        _ name: String, _ type: ParamType, required: Bool = false, default defaultValue: ParamValue? = nil,
        range: ClosedRange<Double>? = nil, environment: String? = nil, doc: String
    ) {
        self.name = name
        self.type = type
        self.required = required
        self.defaultValue = defaultValue
        self.range = range
        self.environment = environment
        self.doc = doc
    }
}

/// A parameter type with a shape of its own: its name in the reference, what it expects, and
/// the function that decodes it into one of `ParamValue`'s shapes.
public struct CustomParamType: Sendable, Hashable {
    /// The type's name in the reference (`URL`, `datacenters`).
    public let name: String
    /// What it accepts, for errors and the reference.
    public let description: String
    let decode: @Sendable (ConfigNode, _ name: String, _ errors: inout [JobFileError]) -> ParamValue?

    public init(
        name: String, description: String,
        decode: @escaping @Sendable (ConfigNode, _ name: String, _ errors: inout [JobFileError]) -> ParamValue?
    ) {
        self.name = name
        self.description = description
        self.decode = decode
    }

    public static func == (a: CustomParamType, b: CustomParamType) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// Suggests a close key name (`did you mean 'timeout'?`), by edit distance.
///
/// A suggestion is at most 3 edits away, so a name whose length differs from the key's by more
/// is never compared: a long key costs its length once, not its length times every name's.
func suggestion(for key: String, among names: [String]) -> String {
    let length = key.utf8.count
    let near = names.filter { abs($0.utf8.count - length) <= 3 }
    guard !near.isEmpty else { return "" }
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
    let best = near.map { ($0, distance(key, $0)) }.min { $0.1 < $1.1 }
    if let best, best.1 <= max(1, min(3, best.0.count / 3)) { return "; did you mean '\(best.0)'?" }
    return ""
}
