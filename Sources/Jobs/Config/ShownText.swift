/// How text from a file is shown in a message: escaped, so a name or value with a newline or
/// an escape sequence cannot forge a line or drive the terminal, and cut short, so an error
/// never replays a value that could be a secret.
public enum ShownText {
    /// How many characters of a value a message shows at most.
    public static let valuePrefix = 16

    /// `text` with control characters written as escapes (`\n`, `\e`, `\u{7F}`).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{1B}": out += "\\e"
            case _ where needsEscape(scalar): out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A value for a message: quoted, escaped, at most `valuePrefix` characters of it.
    public static func value(_ text: String) -> String {
        let cut = text.unicodeScalars.count > valuePrefix
        let head = String(String.UnicodeScalarView(text.unicodeScalars.prefix(valuePrefix)))
        return "'" + escaped(head) + (cut ? "…' (\(text.unicodeScalars.count) characters)" : "'")
    }

    /// Control characters, and the bidirectional overrides that reorder what a terminal shows.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF: return true
        default: return false
        }
    }
}
