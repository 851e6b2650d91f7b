/// The redaction rule: secrets never reach a log.
///
/// 1. A field whose key names a secret is written as `"[redacted]"`, whatever its value (objects
///    and arrays included). Keys are compared case-insensitively with `_`, `-`, `.` removed and a
///    trailing plural `s` dropped; a key is secret if it *is* one of `secretKeys`, or *ends with*
///    one of `secretSuffixes` (`fileReference`, `cdn_token`, `aesKey`, `db-password` …), or ends
///    in `_iv`/`Iv`/`IV` (`aes_iv`, `cdnIv`).
/// 2. In every other string value, a run of ≥ 32 hex digits, or a run of ≥ 32 base64/base64url
///    characters containing an upper-case letter, a lower-case letter and a digit, is replaced by
///    `[redacted]` (file references, keys, IVs and tokens are such runs; paths, words and UUIDs
///    are not). Log hashes as short prefixes if you want to see them.
/// Nested objects and arrays are redacted recursively. The rule applies to the file and the TTY.
public enum LogRedaction {
    public static let marker = "[redacted]"
    public static let secretKeys: Set<String> = [
        "iv", "key", "token", "secret", "password", "passwd", "passphrase", "authorization", "auth", "credential",
        "cookie", "reference", "filereference", "signature", "bearer", "apikey", "privatekey", "session",
    ]
    public static let secretSuffixes = [
        "token", "secret", "password", "passwd", "key", "reference", "credential",
        "authorization", "cookie", "signature",
    ]
    /// Keys that end like a secret but are not.
    public static let allowedKeys: Set<String> = ["keep", "keeptier"]

    /// Is this field name a secret under rule 1?
    public static func isSecretKey(_ key: String) -> Bool {
        // Field names are ASCII: lower-cased and stripped over their bytes, without Unicode
        // case mapping (which `lowercased()` would do, for the same result, many times slower).
        var normalized: String
        if key.utf8.allSatisfy({ $0 < 0x80 }) {
            normalized = String(
                decoding: key.utf8.compactMap { byte -> UInt8? in
                    byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                        ? nil : (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
                }, as: UTF8.self)
        } else {
            normalized = key.lowercased().filter { $0 != "_" && $0 != "-" && $0 != "." }
        }
        if normalized.hasSuffix("s"), normalized.count > 2 { normalized.removeLast() }
        if allowedKeys.contains(normalized) { return false }
        if secretKeys.contains(normalized) { return true }
        let lower = key.utf8.suffix(3).map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
        let separatedIv =
            lower.count == 3 && lower[1...] == [UInt8(ascii: "i"), UInt8(ascii: "v")]
            && [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ".")].contains(lower[0])
        if separatedIv || (key.utf8.count > 2 && (key.hasSuffix("Iv") || key.hasSuffix("IV"))) {
            return true
        }
        return secretSuffixes.contains { normalized.hasSuffix($0) }
    }

    /// Applies both rules to a field map.
    public static func redact(_ fields: [String: LogValue]) -> [String: LogValue] {
        var result: [String: LogValue] = [:]
        for (key, value) in fields {
            result[key] = isSecretKey(key) ? .string(marker) : redact(value)
        }
        return result
    }

    /// Applies the rules inside a value.
    public static func redact(_ value: LogValue) -> LogValue {
        switch value {
        case .string(let text): return .string(redactString(text))
        case .array(let items): return .array(items.map(redact))
        case .object(let fields): return .object(redact(fields))
        default: return value
        }
    }

    /// Rule 2 on one string.
    public static func redactString(_ text: String) -> String {
        // Almost no string holds a run of 32 base64 characters (padding included): those are
        // found over the bytes and returned as they are (the characters are all ASCII).
        var run = 0
        var longest = 0
        for byte in text.utf8 {
            run = byte < 0x80 && (isBase64(Unicode.Scalar(byte)) || byte == UInt8(ascii: "=")) ? run + 1 : 0
            longest = max(longest, run)
        }
        guard longest >= 32 else { return text }
        let scalars = Array(text.unicodeScalars)
        guard scalars.count >= 32 else { return text }
        var output = String.UnicodeScalarView()
        var index = 0
        var changed = false
        while index < scalars.count {
            if isBase64(scalars[index]) {
                var end = index
                while end < scalars.count, isBase64(scalars[end]) { end += 1 }
                while end < scalars.count, scalars[end] == "=" { end += 1 }
                let run = scalars[index..<end]
                if run.count >= 32, looksSecret(run) {
                    output.append(contentsOf: marker.unicodeScalars)
                    changed = true
                } else {
                    output.append(contentsOf: run)
                }
                index = end
            } else {
                output.append(scalars[index])
                index += 1
            }
        }
        return changed ? String(output) : text
    }

    private static func isBase64(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "+" || c == "/" || c == "-" || c == "_"
    }

    private static func isHex(_ c: Unicode.Scalar) -> Bool {
        (c >= "0" && c <= "9") || (c >= "a" && c <= "f") || (c >= "A" && c <= "F")
    }

    private static func looksSecret(_ run: ArraySlice<Unicode.Scalar>) -> Bool {
        // A hex run of ≥ 32 digits anywhere inside the run.
        var hexRun = 0
        for c in run {
            hexRun = isHex(c) ? hexRun + 1 : 0
            if hexRun >= 32 { return true }
        }
        // Base64: all of upper, lower, digit, and ≥ 32 characters without a path separator
        // between them (so `/var/lib/Data2024/…` paths survive).
        for segment in run.split(separator: "/") where segment.count >= 32 {
            let upper = segment.contains { $0 >= "A" && $0 <= "Z" }
            let lower = segment.contains { $0 >= "a" && $0 <= "z" }
            let digit = segment.contains { $0 >= "0" && $0 <= "9" }
            if upper && lower && digit { return true }
        }
        // Standard base64 may contain '/': judge the whole run when no segment decided.
        if run.contains("/"), run.count >= 40 {
            let segments = run.split(separator: "/")
            let short = segments.allSatisfy { $0.count < 24 }
            let mixed = run.contains { $0 >= "A" && $0 <= "Z" } && run.contains { $0 >= "a" && $0 <= "z" } && run.contains { $0 >= "0" && $0 <= "9" }
            let plusOrPad = run.contains("+") || run.last == "="
            return short && mixed && plusOrPad
        }
        return false
    }
}
