/// A structured log field value (what JSON can hold), built from literals:
/// `["bytes": 1024, "peer": "channel", "dry_run": true]`.
public indirect enum LogValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([LogValue])
    case object([String: LogValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: LogValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, LogValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    public init(_ value: Int) { self = .int(Int64(value)) }
    public init(_ value: Duration) { self = .double(value.jobSeconds) }

    /// An array or an object: JSON in a line for people, so left to the JSON log where it can.
    public var isStructured: Bool {
        switch self {
        case .array, .object: return true
        default: return false
        }
    }

    /// Plain text for human-readable lines.
    public var description: String {
        switch self {
        case .string(let value): return value
        case .int(let value): return String(value)
        case .double(let value): return JSONLine.number(value)
        case .bool(let value): return String(value)
        case .null: return "null"
        case .array, .object: return JSONLine.encode(self)
        }
    }
}
