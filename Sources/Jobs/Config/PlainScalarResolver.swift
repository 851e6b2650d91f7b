/// The type a plain (unquoted) YAML scalar resolves to under YAML 1.1's core rules — the rules
/// Yams applies with its default resolver — written as small matchers instead of regular
/// expressions: compiling the resolver's expressions costs every `jobrun` start about a
/// millisecond, more than reading all job files.
///
/// Order and grammar as in YAML 1.1: bool, int, float, null, timestamp; anything else a string.
enum PlainScalarResolver {
    static func resolve(_ text: String) -> ConfigNode.ScalarType {
        let s = Array(text.utf8)
        if isBool(text) { return .bool }
        if isInt(s) { return .int }
        if isFloat(s) { return .float }
        if isNull(text) { return .null }
        if isTimestamp(s) { return .timestamp }
        return .string
    }

    private static let bools: Set<String> = [
        "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
    ]
    private static func isBool(_ text: String) -> Bool { bools.contains(text) }
    private static func isNull(_ text: String) -> Bool { text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL" }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    private static func isHex(_ c: UInt8) -> Bool { isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46) }

    /// `[-+]?` then the rest.
    private static func unsigned(_ s: [UInt8]) -> ArraySlice<UInt8> {
        if let first = s.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") { return s.dropFirst() }
        return s[...]
    }

    /// One or more of `allowed` (underscores included by the caller's set).
    private static func all(_ s: ArraySlice<UInt8>, _ allowed: (UInt8) -> Bool) -> Bool { !s.isEmpty && s.allSatisfy(allowed) }

    /// Sexagesimal tail `(:[0-5]?[0-9])+`.
    private static func isSexagesimalTail(_ s: ArraySlice<UInt8>) -> Bool {
        var rest = s
        guard !rest.isEmpty else { return false }
        while !rest.isEmpty {
            guard rest.first == UInt8(ascii: ":") else { return false }
            rest = rest.dropFirst()
            let digits = rest.prefix { isDigit($0) }
            guard digits.count == 1 || (digits.count == 2 && digits.first! <= UInt8(ascii: "5")) else { return false }
            rest = rest.dropFirst(digits.count)
        }
        return true
    }

    private static func isInt(_ s: [UInt8]) -> Bool {
        let u = unsigned(s)
        guard let first = u.first else { return false }
        let digitOrUnderscore: (UInt8) -> Bool = { isDigit($0) || $0 == UInt8(ascii: "_") }
        if u.starts(with: "0b".utf8) { return all(u.dropFirst(2)) { $0 == 0x30 || $0 == 0x31 || $0 == UInt8(ascii: "_") } }
        if u.starts(with: "0x".utf8) { return all(u.dropFirst(2)) { isHex($0) || $0 == UInt8(ascii: "_") } }
        let octal: (UInt8) -> Bool = { ($0 >= 0x30 && $0 <= 0x37) || $0 == UInt8(ascii: "_") }
        if first == 0x30 {
            if u.count == 1 { return true }
            if u.dropFirst().first == UInt8(ascii: "o") { return all(u.dropFirst(2), octal) }
            return all(u.dropFirst(), octal)
        }
        guard isDigit(first) else { return false }
        // [1-9][0-9_]* optionally followed by a sexagesimal tail.
        let body = u.prefix { digitOrUnderscore($0) }
        return body.count == u.count || isSexagesimalTail(u.dropFirst(body.count))
    }

    private static func isFloat(_ s: [UInt8]) -> Bool {
        let text = String(decoding: s, as: UTF8.self)
        let u = unsigned(s)
        let digitOrUnderscore: (UInt8) -> Bool = { isDigit($0) || $0 == UInt8(ascii: "_") }
        // [-+]?.(inf|Inf|INF) and .(nan|NaN|NAN) (no sign)
        if [".inf", ".Inf", ".INF"].contains(String(decoding: u, as: UTF8.self)) { return true }
        if [".nan", ".NaN", ".NAN"].contains(text) { return true }
        // \.[0-9_]+([eE][-+][0-9]+)?   (no sign)
        if s.first == UInt8(ascii: ".") {
            let mantissa = s.dropFirst().prefix { digitOrUnderscore($0) }
            guard !mantissa.isEmpty else { return false }
            let rest = s.dropFirst(1 + mantissa.count)
            return rest.isEmpty || isExponent(rest, signRequired: true)
        }
        guard let first = u.first, isDigit(first) else { return false }
        let whole = u.prefix { digitOrUnderscore($0) }
        var rest = u.dropFirst(whole.count)
        // [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
        if rest.first == UInt8(ascii: ":") {
            guard let dot = rest.firstIndex(of: UInt8(ascii: ".")) else { return false }
            return isSexagesimalTail(rest[..<dot]) && rest[rest.index(after: dot)...].allSatisfy(digitOrUnderscore)
        }
        // [-+]?[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            rest = rest.dropFirst(rest.prefix { digitOrUnderscore($0) }.count)
        }
        return rest.isEmpty || isExponent(rest, signRequired: false)
    }

    private static func isExponent(_ s: ArraySlice<UInt8>, signRequired: Bool) -> Bool {
        guard let e = s.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") else { return false }
        var rest = s.dropFirst()
        if let sign = rest.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            rest = rest.dropFirst()
        } else if signRequired {
            return false
        }
        return all(rest, isDigit)
    }

    private static func isTimestamp(_ s: [UInt8]) -> Bool {
        // yyyy-mm-dd, or yyyy-m-d followed by a time.
        func digits(_ slice: inout ArraySlice<UInt8>, _ range: ClosedRange<Int>) -> Bool {
            let run = slice.prefix { isDigit($0) }
            guard range.contains(run.count) else { return false }
            slice = slice.dropFirst(run.count)
            return true
        }
        func expect(_ slice: inout ArraySlice<UInt8>, _ c: Character) -> Bool {
            guard slice.first == c.asciiValue else { return false }
            slice = slice.dropFirst()
            return true
        }
        var rest = s[...]
        guard digits(&rest, 4...4), expect(&rest, "-") else { return false }
        let dateStart = rest
        if digits(&rest, 2...2), expect(&rest, "-"), digits(&rest, 2...2), rest.isEmpty { return true }
        rest = dateStart
        guard digits(&rest, 1...2), expect(&rest, "-"), digits(&rest, 1...2) else { return false }
        // ([Tt]|[ \t]+)
        if let c = rest.first, c == UInt8(ascii: "T") || c == UInt8(ascii: "t") {
            rest = rest.dropFirst()
        } else {
            let blanks = rest.prefix { $0 == 0x20 || $0 == 0x09 }
            guard !blanks.isEmpty else { return false }
            rest = rest.dropFirst(blanks.count)
        }
        guard digits(&rest, 1...2), expect(&rest, ":"), digits(&rest, 2...2), expect(&rest, ":"), digits(&rest, 2...2) else { return false }
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            rest = rest.dropFirst(rest.prefix { isDigit($0) }.count)
        }
        if rest.isEmpty { return true }
        rest = rest.dropFirst(rest.prefix { $0 == 0x20 || $0 == 0x09 }.count)
        if rest.first == UInt8(ascii: "Z") { return rest.count == 1 }
        guard let sign = rest.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") else { return false }
        rest = rest.dropFirst()
        guard digits(&rest, 1...2) else { return false }
        if rest.isEmpty { return true }
        return expect(&rest, ":") && digits(&rest, 2...2) && rest.isEmpty
    }
}
