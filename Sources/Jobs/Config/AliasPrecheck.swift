import Foundation
import Yams

/// Finds a YAML alias before the real parse can pay for it.
///
/// Yams composes an alias as the anchored node itself, and it hashes a mapping's keys to find
/// duplicates: an alias used as a key (`? *a`) makes that hash walk the whole expansion, so a
/// few hundred bytes of nested aliases cost seconds to minutes before any check of ours runs.
///
/// The precheck parses a copy of the text in which every `*` is followed by a prefix no anchor
/// name can have. Every alias in the copy is then undefined, so the composer stops at the first
/// one, cheaply, and reports where it is. Any other error in the copy happened before the first
/// alias, so the real parse meets it too and stops there just as cheaply. Plain scalars and
/// quoted text that contain `*` change only in their content, which the copy never uses.
enum AliasPrecheck {
    private static let prefix = "jobrun-undefined-alias-"

    /// The errors for the first alias in `yaml` (at the alias, and at the anchor it reuses when
    /// the text has one), or none.
    static func errors(in yaml: String, file: String) -> [JobFileError] {
        guard let alias = firstAlias(in: yaml, file: file) else { return [] }
        var errors = [JobFileError(alias.position, "YAML aliases are not supported in job files", expected: "a plain value")]
        if let anchor = anchorPosition(named: alias.name, before: alias.position, in: yaml, file: file) {
            errors.append(
                JobFileError(
                    anchor,
                    "YAML anchors and aliases are not supported in job files (this value is reused by the alias at line \(alias.position.line), column \(alias.position.column))",
                    expected: "plain values"))
        }
        return errors
    }

    /// The position and anchor name of the first alias in `yaml`, or nil when there is none.
    static func firstAlias(in yaml: String, file: String) -> (position: SourcePosition, name: Substring)? {
        guard yaml.utf8.contains(UInt8(ascii: "*")) else { return nil }
        let copy = yaml.replacingOccurrences(of: "*", with: "*" + prefix)
        do {
            _ = try Yams.compose(yaml: copy, .basic)
        } catch let YamlError.composer(_, problem, mark, _) where problem == "found undefined alias" {
            let position = SourcePosition(file: file, line: mark.line, column: originalColumn(mark, in: yaml))
            return (position, name(at: position, in: yaml))
        } catch {
            return nil
        }
        return nil
    }

    /// Where an anchor or alias name ends: at white space or a flow indicator.
    private static func isNameCharacter(_ c: Character) -> Bool { !c.isWhitespace && !",[]{}".contains(c) }

    private static func lines(_ yaml: String) -> [Substring] { yaml.split(separator: "\n", omittingEmptySubsequences: false) }

    /// The name after the `*` at `position`.
    private static func name(at position: SourcePosition, in yaml: String) -> Substring {
        let all = lines(yaml)
        guard position.line - 1 < all.count else { return "" }
        let line = all[position.line - 1]
        let start = line.unicodeScalars.index(line.startIndex, offsetBy: position.column, limitedBy: line.endIndex) ?? line.endIndex
        return line[start...].prefix(while: isNameCharacter)
    }

    /// The last `&name` before `limit`, where the reused value starts.
    private static func anchorPosition(named name: Substring, before limit: SourcePosition, in yaml: String, file: String) -> SourcePosition? {
        guard !name.isEmpty else { return nil }
        var found: SourcePosition?
        for (index, line) in lines(yaml).enumerated() where index + 1 <= limit.line {
            var column = 1
            var rest = line[...]
            while let amp = rest.firstIndex(of: "&") {
                column += rest.unicodeScalars[rest.startIndex..<amp].count
                let after = rest[rest.index(after: amp)...]
                if after.prefix(while: isNameCharacter) == name, index + 1 < limit.line || column < limit.column {
                    found = SourcePosition(file: file, line: index + 1, column: column)
                }
                rest = after
                column += 1
            }
        }
        return found
    }

    /// The column in `yaml` of a mark in the copy: each `*` before it on its line added the prefix.
    private static func originalColumn(_ mark: Mark, in yaml: String) -> Int {
        var line = 1
        var startOfLine = yaml.unicodeScalars.startIndex
        for index in yaml.unicodeScalars.indices where line < mark.line {
            if yaml.unicodeScalars[index] == "\n" {
                line += 1
                startOfLine = yaml.unicodeScalars.index(after: index)
            }
        }
        var copyColumn = 1
        var column = 1
        for scalar in yaml.unicodeScalars[startOfLine...] {
            if copyColumn >= mark.column || scalar == "\n" { break }
            copyColumn += scalar == "*" ? 1 + prefix.unicodeScalars.count : 1
            column += 1
        }
        return column
    }
}
