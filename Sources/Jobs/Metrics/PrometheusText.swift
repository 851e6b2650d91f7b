/// Prometheus text exposition format helpers: metric names, label escaping, sample lines.
public enum PrometheusText {
    /// Escapes a label value: backslash, double quote and newline, as the format requires.
    public static func escapeLabelValue(_ value: String) -> String {
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
        var out = ""
        for (index, scalar) in name.unicodeScalars.enumerated() {
            let letter = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_" || (!label && scalar == ":")
            let digit = scalar >= "0" && scalar <= "9"
            out.unicodeScalars.append(letter || (digit && index > 0) ? scalar : "_")
        }
        return out.isEmpty ? "_" : out
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
        let labelText =
            labels.isEmpty ? "" : "{" + labels.map { "\(sanitizeName($0.0, label: true))=\"\(escapeLabelValue($0.1))\"" }.joined(separator: ",") + "}"
        return "\(name)\(labelText) \(formatValue(value))"
    }
}
