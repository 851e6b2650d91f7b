/// Severity of a log event, lowest first (the names written in the `level` field).
public enum LogLevel: String, Sendable, Hashable, CaseIterable, Comparable {
    case debug, info, notice, warning, error

    private var rank: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}
