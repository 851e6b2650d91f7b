import ConfinedFiles

/// How text from a file is shown in a message: escaped, so a name or value with a newline or
/// an escape sequence cannot forge a line or drive the terminal, and cut short, so an error
/// never replays a value that could be a secret.
public enum ShownText {
    /// How many characters of a value a message shows at most.
    public static let valuePrefix = 16

    /// `text` with control characters written as escapes (`\n`, `\e`, `\u{7F}`): `Printable`'s
    /// one rule, never cut.
    public static func escaped(_ text: String) -> String { Printable.path(text) }

    /// A value for a message: quoted, escaped, at most `valuePrefix` characters of it.
    public static func value(_ text: String) -> String {
        let cut = text.unicodeScalars.count > valuePrefix
        let head = String(String.UnicodeScalarView(text.unicodeScalars.prefix(valuePrefix)))
        return "'" + escaped(head) + (cut ? "…' (\(text.unicodeScalars.count) characters)" : "'")
    }
}
