/// The parameter reference of each kind, written from the kinds themselves: `docs/job-files.md`
/// carries this text (a test fails when they differ) and `jobrun list --kinds` prints it.
public enum KindReference {
    /// Markers around the generated part of `docs/job-files.md`.
    public static let beginMarker = "<!-- kinds: generated from the kinds' parameters; do not edit by hand -->"
    public static let endMarker = "<!-- end of generated kinds -->"

    /// A `###` section per kind: its summary and a table of its parameters.
    public static func markdown(_ registry: JobKindRegistry = .shipped) -> String {
        var out = ""
        for kind in registry.kinds {
            out += "### `\(kind.name)`\n\n\(capitalized(kind.summary)).\n\n"
            out += "| param | type | default | range | meaning |\n|---|---|---|---|---|\n"
            for spec in kind.parameters.map(\.spec) {
                out += "| `\(spec.name)` | \(typeText(spec.type)) | \(defaultText(spec)) | \(rangeText(spec)) | \(spec.doc) |\n"
            }
            out += "\n"
        }
        return out
    }

    /// Plain text for a terminal: each kind, its summary and its parameters.
    public static func text(_ registry: JobKindRegistry = .shipped) -> String {
        var out = ""
        for kind in registry.kinds {
            out += "\(kind.name) — \(kind.summary)\n"
            for spec in kind.parameters.map(\.spec) {
                let range = rangeText(spec)
                out += "  \(spec.name): \(typeText(spec.type)), default \(defaultText(spec).replacingOccurrences(of: "**", with: ""))"
                out += (range.isEmpty ? "" : ", \(range)") + " — \(spec.doc)\n"
            }
        }
        return out
    }

    /// Replaces the generated part of a document's text, between `beginMarker` and `endMarker`
    /// (these by default); nil when the markers are missing.
    public static func replacingGenerated(
        in document: String, with generated: String, beginMarker: String = beginMarker, endMarker: String = endMarker
    ) -> String? {
        guard let begin = document.range(of: beginMarker), let end = document.range(of: endMarker),
            begin.upperBound <= end.lowerBound
        else { return nil }
        return String(document[..<begin.upperBound]) + "\n\n" + generated + String(document[end.lowerBound...])
    }

    static func typeText(_ type: ParamType) -> String {
        switch type {
        case .string: return "string"
        case .int: return "integer"
        case .double: return "number"
        case .bool: return "boolean"
        case .duration: return "duration"
        case .byteSize: return "size"
        case .oneOf(let words): return "one of: " + words.joined(separator: ", ")
        case .list(.oneOf(let words)): return "list of: " + words.joined(separator: ", ")
        case .list(let element): return "list of \(typeText(element))s"
        case .map(let keys, let value): return "map {\(keys.joined(separator: ", "))} → \(typeText(value))"
        case .section: return "section"
        case .kindParameters: return "mapping"
        case .custom(let custom): return custom.name
        }
    }

    static func defaultText(_ spec: ParamSpec) -> String {
        if spec.required { return "**required**" }
        guard let value = spec.defaultValue else { return "—" }
        switch (spec.type, value) {
        case (.list(.oneOf(let words)), .list(let items)) where items.count == words.count && !words.isEmpty:
            return "all"
        case (.list, .list(let items)) where items.isEmpty:
            return "[]"
        case (_, .double(let number)) where number == number.rounded() && abs(number) < 1e15:
            return String(Int64(number))
        case (.map(let keys, _), .map(let items)):
            if items.isEmpty { return "{}" }
            return keys.compactMap { key in items[key].map { "\(key) \($0)" } }.joined(separator: ", ")
        default:
            return value.description
        }
    }

    static func rangeText(_ spec: ParamSpec) -> String {
        guard let range = spec.range else { return "" }
        func bound(_ number: Double) -> String {
            switch spec.type {
            case .duration, .map(_, .duration), .list(.duration):
                return ConfigDuration.format(.milliseconds(Int64(number * 1000)))
            case .byteSize, .map(_, .byteSize), .list(.byteSize):
                return number == 0 ? "0" : ByteSize.decimal(Int64(number))
            default:
                return ParamDecoder.format(number, spec.type)
            }
        }
        return "\(bound(range.lowerBound)) – \(bound(range.upperBound))"
    }

    private static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }
}
