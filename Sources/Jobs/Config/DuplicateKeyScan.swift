/// Finds every repeated key of every block mapping in YAML text, by indentation.
///
/// The YAML parser stops at the first mapping that repeats a key; a job file should report all
/// its errors at once, so when the parser finds one this scan lists them all. It reads block
/// style (the style job files are written in); keys inside flow mappings are not seen.
enum DuplicateKeyScan {
    struct Duplicate: Equatable {
        var key: String
        var line: Int
        var column: Int
        /// The line the key first appeared on (same column).
        var firstLine: Int
    }

    static func duplicates(in yaml: String) -> [Duplicate] {
        // One level per open block mapping: its key column and the keys seen so far.
        var levels: [(column: Int, keys: [String: Int])] = []
        var found: [Duplicate] = []
        var lineNumber = 0
        for rawLine in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            var rest = Substring(rawLine)
            var column = 1
            while rest.first == " " {
                rest.removeFirst()
                column += 1
            }
            if rest.isEmpty || rest.first == "#" || rest.hasPrefix("---") || rest.hasPrefix("...") { continue }
            // "- key: value" opens a new mapping at the key's column.
            var opensMapping = false
            while rest.hasPrefix("- ") {
                rest.removeFirst(2)
                column += 2
                while rest.first == " " {
                    rest.removeFirst()
                    column += 1
                }
                opensMapping = true
            }
            guard let key = leadingKey(rest) else {
                while let last = levels.last, last.column > column { levels.removeLast() }
                continue
            }
            while let last = levels.last, last.column > column || (opensMapping && last.column == column) {
                levels.removeLast()
            }
            if let last = levels.last, last.column == column {
                if let first = last.keys[key] {
                    found.append(Duplicate(key: key, line: lineNumber, column: column, firstLine: first))
                } else {
                    levels[levels.count - 1].keys[key] = lineNumber
                }
            } else {
                levels.append((column, [key: lineNumber]))
            }
        }
        return found
    }

    /// The key of a `key: value` (or `key:`) line: plain, or single- or double-quoted.
    private static func leadingKey(_ text: Substring) -> String? {
        if let quote = text.first, quote == "\"" || quote == "'" {
            let body = text.dropFirst()
            guard let close = body.firstIndex(of: quote) else { return nil }
            let after = body[body.index(after: close)...]
            return after.hasPrefix(":") && (after.count == 1 || after.dropFirst().first == " ") ? String(body[..<close]) : nil
        }
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            if c == ":" {
                let next = text.index(after: index)
                if next == text.endIndex || text[next] == " " || text[next] == "\t" {
                    let key = text[..<index]
                    return key.isEmpty || key.contains("{") || key.contains("[") ? nil : String(key)
                }
            }
            if c == "#" || c == "{" || c == "[" { return nil }
            index = text.index(after: index)
        }
        return nil
    }
}
