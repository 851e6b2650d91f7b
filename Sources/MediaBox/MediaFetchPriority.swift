/// How urgently a caller wants a range of a resource (Telegram's `MediaBoxFetchPriority`).
/// The fetcher starts parts of the highest priority first; a higher-priority request that
/// arrives during a lower one's transfer gets the next part that starts.
public enum MediaFetchPriority: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Background work: prefetch, a whole-file fetch nobody waits on.
    case `default` = 0
    /// Someone will look at it soon (the next items of a gallery).
    case elevated = 1
    /// Someone waits for it now (the header of a video being opened).
    case maximum = 2

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .default: return "default"
        case .elevated: return "elevated"
        case .maximum: return "maximum"
        }
    }

    /// Parses `default`, `elevated` or `maximum`.
    public init?(name: String) {
        guard let p = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = p
    }
}
