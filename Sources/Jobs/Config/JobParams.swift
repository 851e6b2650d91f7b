/// A kind's validated parameters (defaults filled in), with the source position of each one
/// given in the file, so a kind's own semantic checks can still report `file:line:column`.
public struct JobParams: Sendable, Hashable {
    public var kind: String
    public var values: [String: ParamValue]
    public var positions: [String: SourcePosition]
    /// The raw nodes as written, for kinds that need more than the schema checks.
    public var nodes: [String: ConfigNode]
    /// Where the `params:` mapping is (or the job file's root when absent).
    public var fallback: SourcePosition

    public init(kind: String, values: [String: ParamValue], positions: [String: SourcePosition] = [:],
                nodes: [String: ConfigNode] = [:], fallback: SourcePosition) {
        self.kind = kind
        self.values = values
        self.positions = positions
        self.nodes = nodes
        self.fallback = fallback
    }

    public subscript(name: String) -> ParamValue? { values[name] }

    public func string(_ name: String) -> String? {
        if case .string(let value)? = values[name] { return value }
        return nil
    }

    public func int(_ name: String) -> Int64? {
        if case .int(let value)? = values[name] { return value }
        return nil
    }

    public func double(_ name: String) -> Double? {
        switch values[name] {
        case .double(let value)?: return value
        case .int(let value)?: return Double(value)
        default: return nil
        }
    }

    public func bool(_ name: String) -> Bool? {
        if case .bool(let value)? = values[name] { return value }
        return nil
    }

    public func duration(_ name: String) -> Duration? {
        if case .duration(let value)? = values[name] { return value }
        return nil
    }

    /// A byte size in bytes.
    public func bytes(_ name: String) -> Int64? {
        if case .bytes(let value)? = values[name] { return value }
        return nil
    }

    /// A list of strings or words.
    public func strings(_ name: String) -> [String]? {
        guard case .list(let items)? = values[name] else { return nil }
        return items.compactMap { if case .string(let value) = $0 { return value }; return nil }
    }

    /// A list of integers (e.g. peer ids).
    public func ints(_ name: String) -> [Int64]? {
        guard case .list(let items)? = values[name] else { return nil }
        return items.compactMap { if case .int(let value) = $0 { return value }; return nil }
    }

    /// A map of sizes (e.g. `sizeCaps`), keyed by the schema's words.
    public func byteSizes(_ name: String) -> [String: Int64]? {
        guard case .map(let items)? = values[name] else { return nil }
        return items.compactMapValues { if case .bytes(let value) = $0 { return value }; return nil }
    }

    /// A map of durations (e.g. per-category TTLs).
    public func durations(_ name: String) -> [String: Duration]? {
        guard case .map(let items)? = values[name] else { return nil }
        return items.compactMapValues { if case .duration(let value) = $0 { return value }; return nil }
    }

    /// Where `name` was written, or the `params:` position when it came from a default.
    public func position(of name: String) -> SourcePosition { positions[name] ?? fallback }

    /// An error about a parameter, positioned where it was written: for a kind's own checks.
    public func error(_ name: String, _ message: String, expected: String? = nil) -> JobFileError {
        JobFileError(position(of: name), message, expected: expected)
    }
}
