/// Parser for `CronSchedule`: fields, names, ranges, steps, macros, and the never-fires check.
/// Errors carry the character offset of the offending field element.
enum CronParser {
    static let macros: [String: String] = [
        "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@weekly": "0 0 * * 0",
        "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
    ]
    static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    static let dayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    struct Field {
        let name: String
        let range: ClosedRange<Int>
        let names: [String]  // index 0 = range.lowerBound
    }

    static let fields = [
        Field(name: "minute", range: 0...59, names: []),
        Field(name: "hour", range: 0...23, names: []),
        Field(name: "day-of-month", range: 1...31, names: []),
        Field(name: "month", range: 1...12, names: monthNames),
        Field(name: "day-of-week", range: 0...7, names: dayNames + ["SUN"]),
    ]

    static func parse(_ text: String) -> Result<CronSchedule, ConfigValueError> {
        // Split on blanks, remembering each field's offset in characters.
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { (String($0), text.distance(from: text.startIndex, to: $0.startIndex)) }
        if tokens.count == 1, tokens[0].0.hasPrefix("@") {
            guard let expanded = macros[tokens[0].0.lowercased()] else {
                return .failure(ConfigValueError(offset: tokens[0].1, message: "unknown macro '\(tokens[0].0)' (@reboot is not supported)"))
            }
            return parseFields(expanded.split(separator: " ").map { (String($0), tokens[0].1) }, expression: text)
        }
        guard tokens.count == 5 else {
            let offset = tokens.count > 5 ? tokens[5].1 : text.count
            return .failure(ConfigValueError(offset: offset, message: "expected 5 fields, found \(tokens.count)"))
        }
        return parseFields(tokens, expression: text)
    }

    private static func parseFields(_ tokens: [(String, Int)], expression: String) -> Result<CronSchedule, ConfigValueError> {
        var bits: [UInt64] = []
        for (position, (token, offset)) in tokens.enumerated() {
            switch parseField(token, offset: offset, field: fields[position]) {
            case .success(var value):
                if position == 4, value & (1 << 7) != 0 { value = (value & ~(1 << 7)) | 1 }  // 7 = Sunday
                bits.append(value)
            case .failure(let error): return .failure(error)
            }
        }
        let schedule = CronSchedule(
            expression: expression, minute: bits[0], hour: bits[1], dom: bits[2], month: bits[3],
            dow: bits[4], domStar: tokens[2].0.hasPrefix("*"), dowStar: tokens[4].0.hasPrefix("*"))
        if schedule.usesDayOr {
            return .success(schedule)
        }
        // With AND semantics, some (month, day) pair must exist (Feb counts 29 days: leap years fire).
        let maxDays = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        let possible = schedule.months.contains { month in schedule.daysOfMonth.contains { $0 <= maxDays[month] } }
        if !possible {
            return .failure(ConfigValueError(offset: tokens[2].1, message: "schedule never fires: no month in the month field has any of these days"))
        }
        return .success(schedule)
    }

    private static func parseField(_ token: String, offset: Int, field: Field) -> Result<UInt64, ConfigValueError> {
        var bits: UInt64 = 0
        var elementOffset = offset
        for element in token.split(separator: ",", omittingEmptySubsequences: false) {
            defer { elementOffset += element.count + 1 }
            func fail(_ message: String) -> Result<UInt64, ConfigValueError> {
                .failure(ConfigValueError(offset: elementOffset, message: "\(field.name) field: \(message)"))
            }
            if element.isEmpty { return fail("empty list element") }
            let parts = element.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return fail("more than one '/' in '\(element)'") }
            var step = 1
            if parts.count == 2 {
                guard let parsed = Int(parts[1]), parsed >= 1, parts[1].allSatisfy(\.isASCII) else {
                    return fail("step '\(parts[1])' must be a positive integer")
                }
                guard parsed <= field.range.upperBound - field.range.lowerBound + 1 else {
                    return fail("step \(parsed) is larger than the field's range")
                }
                step = parsed
            }
            let base = parts[0]
            var low: Int
            var high: Int
            if base == "*" {
                low = field.range.lowerBound
                high = field.name == "day-of-week" ? 6 : field.range.upperBound
            } else {
                let ends = base.split(separator: "-", omittingEmptySubsequences: false)
                guard ends.count <= 2 else { return fail("bad range '\(base)'") }
                guard let first = value(String(ends[0]), field) else {
                    return fail(
                        "'\(ends[0])' is not a valid value (\(field.range.lowerBound)-\(field.range.upperBound)\(field.names.isEmpty ? "" : " or a name"))")
                }
                low = first
                high = first
                if ends.count == 2 {
                    guard let second = value(String(ends[1]), field) else {
                        return fail(
                            "'\(ends[1])' is not a valid value (\(field.range.lowerBound)-\(field.range.upperBound)\(field.names.isEmpty ? "" : " or a name"))")
                    }
                    guard second >= first else { return fail("range \(base) runs backwards") }
                    high = second
                } else if parts.count == 2 {
                    return fail("a step needs a range or '*' ('\(element)'; write \(base)-\(field.range.upperBound)/\(step))")
                }
            }
            for value in stride(from: low, through: high, by: step) { bits |= 1 << UInt64(value) }
        }
        return .success(bits)
    }

    private static func value(_ text: String, _ field: Field) -> Int? {
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(text) {
            return field.range.contains(number) ? number : nil
        }
        if let index = field.names.firstIndex(of: text.uppercased()) { return field.range.lowerBound + index }
        return nil
    }
}
