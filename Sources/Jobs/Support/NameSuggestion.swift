/// "Did you mean …?" for a mistyped name: the closest known names by edit distance, when they
/// are close enough to be a typo rather than another word.
public enum NameSuggestion {
    /// Known names within a distance of a third of the typed name's length (at least 2), nearest
    /// first; a known name that contains the typed one (or the reverse) counts as near.
    public static func closest(to typed: String, among known: [String], limit: Int = 3) -> [String] {
        let lowered = typed.lowercased()
        let threshold = max(2, lowered.count / 3)
        let scored = known.map { name -> (String, Int) in
            let candidate = name.lowercased()
            if candidate.contains(lowered) || lowered.contains(candidate) { return (name, 1) }
            return (name, distance(lowered, candidate))
        }
        return scored.filter { $0.1 <= threshold }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }.prefix(limit).map(\.0)
    }

    /// " (did you mean a or b?)", or "" when nothing is close.
    public static func hint(for typed: String, among known: [String]) -> String {
        let names = closest(to: typed, among: known)
        guard !names.isEmpty else { return "" }
        return "; did you mean " + names.map { "'\($0)'" }.joined(separator: " or ") + "?"
    }

    /// Levenshtein distance (insertions, deletions, substitutions).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
