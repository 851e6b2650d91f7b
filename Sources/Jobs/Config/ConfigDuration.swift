/// Parses job-file durations: `500ms`, `30s`, `5m`, `1h30m`, `2d`, `1w`.
///
/// Units in descending order, each at most once, non-negative integers only. A bare number is
/// rejected (is `30` seconds or minutes?), as are `-1s`, `5x` and `1.5h`.
public enum ConfigDuration {
    public static let expected = "a duration like 30s, 5m, 1h30m, 2d (units ms, s, m, h, d, w)"

    private static let units: [(suffix: String, milliseconds: Int64)] = [
        ("w", 7 * 86_400_000), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1),
    ]

    /// Returns the duration, or the character offset and reason of the problem.
    public static func parse(_ text: String) -> Result<Duration, ConfigValueError> {
        let chars = Array(text.unicodeScalars)
        guard !chars.isEmpty else { return .failure(ConfigValueError(offset: 0, message: "empty duration")) }
        var index = 0
        var total: Int64 = 0
        var lastRank = -1
        while index < chars.count {
            let start = index
            var number: Int64 = 0
            while index < chars.count, chars[index].isASCII, let digit = Int64(String(chars[index])) {
                let (mul, o1) = number.multipliedReportingOverflow(by: 10)
                let (sum, o2) = mul.addingReportingOverflow(digit)
                if o1 || o2 { return .failure(ConfigValueError(offset: start, message: "duration too large")) }
                number = sum
                index += 1
            }
            if index == start {
                let what = chars[index] == "-" ? "negative durations are not allowed" : "expected a number at \(ShownText.value(String(chars[index])))"
                return .failure(ConfigValueError(offset: index, message: what))
            }
            let unitStart = index
            while index < chars.count, chars[index].properties.isAlphabetic { index += 1 }
            let unit = String(String.UnicodeScalarView(chars[unitStart..<index]))
            if unit.isEmpty {
                let message = index < chars.count ? "unexpected \(ShownText.value(String(chars[index]))) in duration" : "missing unit after \(number)"
                return .failure(ConfigValueError(offset: index, message: message))
            }
            guard let rank = units.firstIndex(where: { $0.suffix == unit }) else {
                return .failure(ConfigValueError(offset: unitStart, message: "unknown duration unit \(ShownText.value(unit))"))
            }
            if rank <= lastRank {
                return .failure(ConfigValueError(offset: unitStart, message: "duration units must be in descending order, each once"))
            }
            lastRank = rank
            let (product, o1) = number.multipliedReportingOverflow(by: units[rank].milliseconds)
            let (sum, o2) = total.addingReportingOverflow(product)
            if o1 || o2 { return .failure(ConfigValueError(offset: start, message: "duration too large")) }
            total = sum
        }
        return .success(.milliseconds(total))
    }

    /// Formats a duration in the same syntax (`1h30m`, `45s`, `0s`).
    public static func format(_ duration: Duration) -> String {
        var ms = milliseconds(duration)
        if ms == 0 { return "0s" }
        var out = ""
        for (suffix, size) in units where suffix != "w" && ms >= size {
            out += "\(ms / size)\(suffix)"
            ms %= size
        }
        return out
    }

    /// Whole milliseconds of a duration.
    public static func milliseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}

extension Duration {
    /// The duration in seconds as a `Double` (for `Date` arithmetic and metrics).
    public var jobSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// A problem inside a scalar value, at a character offset of its text.
public struct ConfigValueError: Error, Sendable, Hashable {
    public var offset: Int
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }
}

extension Duration {
    /// `n` minutes, hours, days: how kinds write their defaults.
    public static func minutes(_ n: Int64) -> Duration { .seconds(n * 60) }
    public static func hours(_ n: Int64) -> Duration { .seconds(n * 3600) }
    public static func days(_ n: Int64) -> Duration { .seconds(n * 86_400) }
}
