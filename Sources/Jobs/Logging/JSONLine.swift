import Foundation

/// Encodes log events as one JSON object per line, with a stable key order (`ts`, `level`,
/// `process`, `pid`, `job`, `run`, `event`, then fields sorted by name) so lines diff and grep well.
public enum JSONLine {
    /// `2026-11-21T23:04:05.123Z`: RFC 3339, milliseconds, UTC.
    public static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = CivilTime.floorDiv(Int(milliseconds), 1000)
        let ms = Int(milliseconds) - seconds * 1000
        let days = CivilTime.floorDiv(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let civil = CivilTime.date(days: days)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return
            "\(pad(civil.year, 4))-\(pad(civil.month, 2))-\(pad(civil.day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(ms, 3))Z"
    }

    /// Encodes one value as JSON.
    public static func encode(_ value: LogValue) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }

    /// Encodes an ordered list of key/value pairs as a JSON object.
    public static func object(_ pairs: [(String, LogValue)]) -> String {
        var out = "{"
        for (index, (key, value)) in pairs.enumerated() {
            if index > 0 { out += "," }
            appendString(key, to: &out)
            out += ":"
            append(value, to: &out)
        }
        return out + "}"
    }

    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    private static func append(_ value: LogValue, to out: inout String) {
        switch value {
        case .string(let text): appendString(text, to: &out)
        case .int(let number): out += String(number)
        case .double(let double): out += Self.number(double)
        case .bool(let flag): out += flag ? "true" : "false"
        case .null: out += "null"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                append(item, to: &out)
            }
            out += "]"
        case .object(let fields):
            out += object(fields.keys.sorted().map { ($0, fields[$0]!) })
        }
    }

    private static func appendString(_ text: String, to out: inout String) {
        out += "\""
        // Most strings need no escape: appended whole. A lead byte 0xE2 may start U+2028/U+2029.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }) {
            out += text
            out += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
