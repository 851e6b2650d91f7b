/// Prometheus text exposition format helpers: metric names, label escaping, sample lines.
public enum PrometheusText {
    /// Escapes a label value: backslash, double quote and newline, as the format requires.
    public static func escapeLabelValue(_ value: String) -> String {
        if !value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) { return value }
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// Escapes HELP text: backslash and newline.
    public static func escapeHelp(_ text: String) -> String {
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\n") }) { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Makes a valid metric or label name (`[a-zA-Z_:][a-zA-Z0-9_:]*`; labels without `:`),
    /// replacing other characters with `_`.
    public static func sanitizeName(_ name: String, label: Bool = false) -> String {
        func valid(_ byte: UInt8, first: Bool) -> Bool {
            isNameByte(byte) && !(label && byte == UInt8(ascii: ":")) && !(first && byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
        var bytes = name.utf8.makeIterator()
        if let first = bytes.next(), valid(first, first: true), IteratorSequence(bytes).allSatisfy({ valid($0, first: false) }) { return name }
        var out = [UInt8]()
        for (index, byte) in name.utf8.enumerated() where byte < 0x80 || byte >= 0xC0 {  // one `_` per character
            out.append(valid(byte, first: index == 0) ? byte : UInt8(ascii: "_"))
        }
        return out.isEmpty ? "_" : String(decoding: out, as: UTF8.self)
    }

    /// `[a-zA-Z0-9_:]`: the bytes a metric name may hold (a digit not first; a label no `:`).
    public static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        case UInt8(ascii: "_"), UInt8(ascii: ":"): return true
        default: return false
        }
    }

    /// Formats a sample value (`+Inf`, `-Inf`, `NaN` as the format spells them).
    public static func formatValue(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// `name{a="x",b="y"} value`, labels in the given order.
    public static func sample(_ name: String, labels: [(String, String)], value: Double) -> String {
        var out = ""
        appendSample(name, labels: labels, value: value, to: &out)
        out.removeLast()
        return out
    }

    /// Appends `sample(name, labels:, value:)` and a newline to `out`, without building each
    /// label's text apart (a metrics file is a few dozen of these per run).
    public static func appendSample(_ name: String, labels: [(String, String)], value: Double, to out: inout String) {
        out += name
        for (index, label) in labels.enumerated() {
            out += index == 0 ? "{" : ","
            out += sanitizeName(label.0, label: true)
            out += "=\""
            out += escapeLabelValue(label.1)
            out += "\""
        }
        out += labels.isEmpty ? " " : "} "
        out += formatValue(value)
        out += "\n"
    }

    /// One exposition from several (the jobs' metrics files): each family once, with the first
    /// HELP and TYPE met and every sample of it from every text, in the order first met. A
    /// sample belongs to the family of the TYPE (or HELP) line before it.
    public static func merge(_ texts: [String]) -> String {
        var order: [String] = []
        var headers: [String: [Substring]] = [:]
        var samples: [String: [Substring]] = [:]
        for text in texts {
            var family = ""
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                    let words = line.split(separator: " ", maxSplits: 3)
                    guard words.count >= 3 else { continue }
                    family = String(words[2])
                    if headers[family] == nil { order.append(family) }
                    let kind = words[1]
                    if headers[family, default: []].contains(where: { $0.hasPrefix("# \(kind) ") }) == false { headers[family, default: []].append(line) }
                    continue
                }
                if line.hasPrefix("#") { continue }
                if headers[family] == nil {
                    family = String(line.prefix { isNameByte($0.asciiValue ?? 0) })
                    if samples[family] == nil { order.append(family) }
                    headers[family] = []
                }
                samples[family, default: []].append(line)
            }
        }
        var out = ""
        for family in order {
            for line in headers[family] ?? [] { out += line + "\n" }
            for line in samples[family] ?? [] { out += line + "\n" }
        }
        return out
    }
}
