/// Reads the part of YAML that job and configuration files are written in straight into a
/// `ConfigNode`, with the positions, scalar types and quoting that composing the same text with
/// Yams gives. Anything outside that part, and anything that would be an error, is declined
/// (`nil`), and the caller composes the text with Yams: this reader never decides what Yams
/// would decide differently, and every error message still comes from one place.
///
/// What it reads, in printable ASCII with `\n` line ends:
/// - block mappings of plain keys (`name:`, `backoffLimit:`), nested by indentation, each key
///   once; a key with no value on its line opens a deeper mapping;
/// - one-line scalars: plain (typed by `PlainScalarResolver`), or quoted with `"…"` or `'…'`
///   without escapes;
/// - one-line flow lists of plain words (`[0]`, `[photo, video]`, `[]`);
/// - comments and blank lines;
/// - at most `maximumDepth` mappings inside one another.
///
/// Why it exists: a `jobrun` start reads its job file, and composing a ten-line file with Yams
/// (its scanner, parser and node tree, and the first use of their generic types) cost about
/// 0.3 ms of an idle cron run of about 15 ms.
enum YamlSubsetReader {
    /// Deeper files are declined: each level is a recursion, and a file of a megabyte could
    /// nest a thousand of them. Job files nest three.
    static let maximumDepth = 16

    static func read(_ yaml: String, file: String) -> ConfigNode? {
        var reader = Reader(bytes: Array(yaml.utf8), file: file)
        return reader.document()
    }

    /// One line that holds more than spaces and a comment.
    private struct Line {
        var number: Int
        /// Offset of the first character that is not a space; its column is `indent + 1`.
        var start: Int
        var end: Int
        var indent: Int
    }

    private struct Reader {
        let bytes: [UInt8]
        let file: String
        var lines: [Line] = []
        var next = 0

        init(bytes: [UInt8], file: String) {
            self.bytes = bytes
            self.file = file
        }

        mutating func document() -> ConfigNode? {
            guard splitLines(), let first = lines.first else { return nil }
            guard let root = mapping(indent: first.indent, depth: 1), next == lines.count else { return nil }
            return root
        }

        /// Collects the lines with content; false for anything outside printable ASCII and `\n`
        /// (tabs, `\r`, a byte-order mark, non-ASCII text: Yams counts their columns) and for
        /// directives and document markers.
        private mutating func splitLines() -> Bool {
            var number = 1
            var lineStart = 0
            var index = 0
            while index <= bytes.count {
                if index < bytes.count {
                    let c = bytes[index]
                    if c != 0x0A {
                        guard c >= 0x20 && c < 0x7F else { return false }
                        index += 1
                        continue
                    }
                }
                var start = lineStart
                while start < index && bytes[start] == UInt8(ascii: " ") { start += 1 }
                if start < index && bytes[start] != UInt8(ascii: "#") {
                    if start == lineStart {
                        let c = bytes[start]
                        if c == UInt8(ascii: "%") || isMarker(c, at: start, before: index) { return false }
                    }
                    lines.append(Line(number: number, start: start, end: index, indent: start - lineStart))
                }
                number += 1
                index += 1
                lineStart = index
            }
            return true
        }

        /// `---` or `...` at the start of a line: a document marker.
        private func isMarker(_ c: UInt8, at offset: Int, before end: Int) -> Bool {
            (c == UInt8(ascii: "-") || c == UInt8(ascii: ".")) && end - offset >= 3 && bytes[offset + 1] == c && bytes[offset + 2] == c
        }

        private func position(_ line: Line, _ offset: Int) -> SourcePosition {
            SourcePosition(file: file, line: line.number, column: offset - line.start + line.indent + 1)
        }

        /// The block mapping whose keys start at `indent`, from the next line on, `depth` levels
        /// down from the top.
        private mutating func mapping(indent: Int, depth: Int) -> ConfigNode? {
            guard depth <= YamlSubsetReader.maximumDepth else { return nil }
            var entries: [ConfigNode.Entry] = []
            var keys: Set<String> = []
            let first = lines[next]
            while next < lines.count {
                let line = lines[next]
                if line.indent < indent { break }
                guard line.indent == indent, let (key, afterColon) = key(line), keys.insert(key).inserted else { return nil }
                var offset = afterColon
                while offset < line.end && bytes[offset] == UInt8(ascii: " ") { offset += 1 }
                let value: ConfigNode
                if offset == line.end || (offset > afterColon && bytes[offset] == UInt8(ascii: "#")) {
                    // Nothing on the line: a deeper mapping follows, or the value is empty (left
                    // to Yams, which places an empty scalar itself).
                    next += 1
                    guard next < lines.count, lines[next].indent > indent, let nested = mapping(indent: lines[next].indent, depth: depth + 1) else {
                        return nil
                    }
                    value = nested
                } else {
                    guard let inline = inlineValue(line, from: offset) else { return nil }
                    value = inline
                    next += 1
                }
                entries.append(ConfigNode.Entry(key: key, keyPosition: position(line, line.start), value: value))
            }
            return ConfigNode(value: .mapping(entries), position: position(first, first.start))
        }

        /// A plain key (`[A-Za-z0-9_][A-Za-z0-9_.-]*`) and the offset after its `:`, which must be
        /// followed by a space or the end of the line.
        private func key(_ line: Line) -> (String, Int)? {
            var offset = line.start
            guard offset < line.end, isWordStart(bytes[offset]) else { return nil }
            while offset < line.end && isKeyCharacter(bytes[offset]) { offset += 1 }
            guard offset < line.end, bytes[offset] == UInt8(ascii: ":") else { return nil }
            let afterColon = offset + 1
            guard afterColon == line.end || bytes[afterColon] == UInt8(ascii: " ") else { return nil }
            return (String(decoding: bytes[line.start..<offset], as: UTF8.self), afterColon)
        }

        private func inlineValue(_ line: Line, from offset: Int) -> ConfigNode? {
            switch bytes[offset] {
            case UInt8(ascii: "\""), UInt8(ascii: "'"): return quoted(line, from: offset)
            case UInt8(ascii: "["): return flowList(line, from: offset)
            default: return plain(line, from: offset)
            }
        }

        /// `"…"` or `'…'` on one line, with no backslash in a double-quoted one and no doubled
        /// quote in a single-quoted one; then only spaces and a comment.
        private func quoted(_ line: Line, from offset: Int) -> ConfigNode? {
            let quote = bytes[offset]
            var close = offset + 1
            while close < line.end && bytes[close] != quote {
                if quote == UInt8(ascii: "\"") && bytes[close] == UInt8(ascii: "\\") { return nil }
                close += 1
            }
            guard close < line.end, endsCleanly(line, after: close + 1) else { return nil }
            let text = String(decoding: bytes[(offset + 1)..<close], as: UTF8.self)
            return ConfigNode(value: .scalar(text, .string), position: position(line, offset), quoted: true)
        }

        /// `[word, word]` or `[]` on one line, each word a plain scalar of letters, digits, `_`,
        /// `.`, `-` and `+` that starts with a letter, a digit or `_`, or with `-`, `+` or `.`
        /// before one of them.
        private func flowList(_ line: Line, from offset: Int) -> ConfigNode? {
            var items: [ConfigNode] = []
            var index = offset + 1
            func skipSpaces() { while index < line.end && bytes[index] == UInt8(ascii: " ") { index += 1 } }
            skipSpaces()
            if index < line.end && bytes[index] == UInt8(ascii: "]") {
                index += 1
            } else {
                while true {
                    let start = index
                    guard index < line.end else { return nil }
                    let c = bytes[index]
                    if c == UInt8(ascii: "-") || c == UInt8(ascii: "+") || c == UInt8(ascii: ".") {
                        guard index + 1 < line.end, isWordStart(bytes[index + 1]) else { return nil }
                    } else if !isWordStart(c) {
                        return nil
                    }
                    while index < line.end && (isKeyCharacter(bytes[index]) || bytes[index] == UInt8(ascii: "+")) { index += 1 }
                    let text = String(decoding: bytes[start..<index], as: UTF8.self)
                    items.append(ConfigNode(value: .scalar(text, PlainScalarResolver.resolve(text)), position: position(line, start)))
                    skipSpaces()
                    guard index < line.end else { return nil }
                    if bytes[index] == UInt8(ascii: "]") {
                        index += 1
                        break
                    }
                    guard bytes[index] == UInt8(ascii: ",") else { return nil }
                    index += 1
                    skipSpaces()
                }
            }
            guard endsCleanly(line, after: index) else { return nil }
            return ConfigNode(value: .sequence(items), position: position(line, offset))
        }

        /// A plain scalar to the end of the line or to a comment (` #`), trailing spaces dropped.
        /// Declined: a first character that is a YAML indicator (`-`, `?` and `:` only when a
        /// space or the line's end follows), a `: ` or a final `:` inside (a mapping Yams would
        /// refuse), and a deeper line after it (a continued scalar; `mapping` declines that).
        private func plain(_ line: Line, from offset: Int) -> ConfigNode? {
            let first = bytes[offset]
            switch first {
            case UInt8(ascii: "-"), UInt8(ascii: "?"), UInt8(ascii: ":"):
                guard offset + 1 < line.end, bytes[offset + 1] != UInt8(ascii: " ") else { return nil }
            case UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "#"),
                UInt8(ascii: "&"), UInt8(ascii: "*"), UInt8(ascii: "!"), UInt8(ascii: "|"), UInt8(ascii: ">"), UInt8(ascii: "%"),
                UInt8(ascii: "@"), UInt8(ascii: "`"):
                return nil
            default:
                break
            }
            var end = offset
            var index = offset
            while index < line.end {
                let c = bytes[index]
                if c == UInt8(ascii: " ") {
                    if index + 1 < line.end && bytes[index + 1] == UInt8(ascii: "#") { break }
                } else {
                    if c == UInt8(ascii: ":") && (index + 1 == line.end || bytes[index + 1] == UInt8(ascii: " ")) { return nil }
                    end = index + 1
                }
                index += 1
            }
            let text = String(decoding: bytes[offset..<end], as: UTF8.self)
            return ConfigNode(value: .scalar(text, PlainScalarResolver.resolve(text)), position: position(line, offset))
        }

        /// Only spaces, then optionally a comment after at least one space, up to the line's end.
        private func endsCleanly(_ line: Line, after offset: Int) -> Bool {
            var index = offset
            while index < line.end && bytes[index] == UInt8(ascii: " ") { index += 1 }
            return index == line.end || (index > offset && bytes[index] == UInt8(ascii: "#"))
        }

        private func isWordStart(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_")
        }

        private func isKeyCharacter(_ c: UInt8) -> Bool { isWordStart(c) || c == UInt8(ascii: ".") || c == UInt8(ascii: "-") }
    }
}
