import Foundation
import Yams

/// A YAML value with the position it came from: the typed tree job files are validated over.
///
/// It is converted from Yams' `Node` once (Yams nodes are not `Sendable`), so kinds can
/// validate their own `params` later and still report `file:line:column`.
public struct ConfigNode: Sendable, Hashable {
    /// The scalar type the YAML 1.1 resolver gave an unquoted scalar; quoted scalars are `.string`.
    public enum ScalarType: String, Sendable, Hashable {
        case string, int, float, bool, null, timestamp
    }

    /// One key of a mapping with its position.
    public struct Entry: Sendable, Hashable {
        public var key: String
        public var keyPosition: SourcePosition
        public var value: ConfigNode
    }

    /// The node's content: a scalar with its resolved type, a list, or a mapping in file order.
    public enum Value: Sendable, Hashable {
        case scalar(String, ScalarType)
        case sequence([ConfigNode])
        case mapping([Entry])
    }

    public var value: Value
    public var position: SourcePosition
    /// True for quoted or block scalars (`"…"`, `'…'`, `|`, `>`): their text starts after the quote.
    public var quoted: Bool

    public init(value: Value, position: SourcePosition, quoted: Bool = false) {
        self.value = value
        self.position = position
        self.quoted = quoted
    }

    /// A human name for the node's type, used in "wrong type" messages.
    public var typeName: String {
        switch value {
        case .scalar(_, let type):
            switch type {
            case .string: return "a string"
            case .int: return "an integer"
            case .float: return "a number"
            case .bool: return "a boolean"
            case .null: return "null"
            case .timestamp: return "a timestamp"
            }
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }

    public var isNull: Bool {
        if case .scalar(_, .null) = value { return true }
        return false
    }

    /// The scalar text, whatever its resolved type.
    public var scalarText: String? {
        if case .scalar(let text, _) = value { return text }
        return nil
    }

    /// Position of a character offset inside a single-line scalar (for errors inside a cron field).
    public func position(atOffset offset: Int) -> SourcePosition {
        var pos = position
        pos.column += offset + (quoted ? 1 : 0)
        return pos
    }
}

extension ConfigNode {
    /// Parses YAML text into a `ConfigNode`; YAML syntax errors and duplicate keys become
    /// `JobFileError`s with positions. `nil` for an empty document.
    public static func parse(yaml: String, file: String) throws(JobFileErrors) -> ConfigNode? {
        // Only text with an anchor (`&`) can make an alias expensive: it is prechecked before the
        // parse. Text without one (a cron schedule's `*` alone) is parsed once, and the precheck
        // runs only when that parse fails, so an alias is reported the same way either way.
        func precheckAliases() throws(JobFileErrors) {
            let aliasErrors = AliasPrecheck.errors(in: yaml, file: file)
            if !aliasErrors.isEmpty { throw JobFileErrors(aliasErrors) }
        }
        let mayHaveAnchors = yaml.utf8.contains(UInt8(ascii: "&"))
        if mayHaveAnchors { try precheckAliases() }
        let node: Node?
        do {
            // Plain scalars are typed by Yams' default (YAML 1.1) resolver. Only the node tree is
            // used, never Yams' Swift values, so the constructor has no maps, and the encoding is
            // given rather than looked up in the environment.
            node = try Yams.compose(yaml: yaml, .default, Constructor([:], [:], [:]), .utf8)
        } catch let error as YamlError {
            if !mayHaveAnchors { try precheckAliases() }
            throw JobFileErrors(yamlErrors(error, yaml: yaml, file: file))
        } catch {
            throw JobFileErrors([
                JobFileError(
                    SourcePosition(file: file, line: 1, column: 1),
                    "YAML error: \(error)")
            ])
        }
        guard let node else { return nil }
        var errors: [JobFileError] = []
        var seen: Set<SourcePosition> = []
        let converted = convert(node, file: file, errors: &errors, seen: &seen)
        if !errors.isEmpty { throw JobFileErrors(errors) }
        return converted
    }

    private static func pos(_ mark: Mark?, _ file: String) -> SourcePosition {
        SourcePosition(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
    }

    private static func convert(_ node: Node, file: String, errors: inout [JobFileError], seen: inout Set<SourcePosition>) -> ConfigNode {
        // Yams composes an alias as the anchored node itself (shared, not copied), so a mark seen
        // twice is an alias. It is refused there and not descended into: a file of nested
        // aliases ("billion laughs") costs its own size to refuse, never its expansion.
        if let mark = node.mark {
            let key = SourcePosition(file: file, line: mark.line, column: mark.column)
            if !seen.insert(key).inserted {
                errors.append(
                    JobFileError(
                        key, "YAML anchors and aliases are not supported in job files (this value is reused by an alias)",
                        expected: "plain values"))
                return ConfigNode(value: .scalar("", .null), position: key)
            }
        }
        switch node {
        case .scalar(let scalar):
            let quoted = scalar.style != .plain && scalar.style != .any
            let type: ScalarType
            if quoted {
                type = .string
            } else {
                switch Tag.Name(rawValue: node.tag.rawValue) {
                case .str: type = .string
                case .int: type = .int
                case .float: type = .float
                case .bool: type = .bool
                case .null: type = .null
                case .timestamp: type = .timestamp
                default: type = .string
                }
            }
            return ConfigNode(value: .scalar(scalar.string, type), position: pos(scalar.mark, file), quoted: quoted)
        case .sequence(let sequence):
            var items: [ConfigNode] = []
            items.reserveCapacity(sequence.count)
            for item in sequence { items.append(convert(item, file: file, errors: &errors, seen: &seen)) }
            return ConfigNode(value: .sequence(items), position: pos(sequence.mark, file))
        case .mapping(let mapping):
            var entries: [Entry] = []
            for (key, value) in mapping {
                let keyPos = pos(key.mark, file)
                guard case .scalar(let keyScalar) = key else {
                    errors.append(JobFileError(keyPos, "mapping keys must be plain strings", expected: "a key like `name:`"))
                    continue
                }
                entries.append(
                    Entry(
                        key: keyScalar.string, keyPosition: keyPos,
                        value: convert(value, file: file, errors: &errors, seen: &seen)))
            }
            return ConfigNode(value: .mapping(entries), position: pos(mapping.mark, file))
        case .alias(let alias):
            errors.append(
                JobFileError(
                    pos(alias.mark, file), "YAML aliases are not supported in job files",
                    expected: "a plain value"))
            return ConfigNode(value: .scalar("", .null), position: pos(alias.mark, file))
        }
    }

    /// A key or word from the file, quoted for a message — only when it looks like one (letters,
    /// digits, `_`, `-`, `.`, at most 64 characters). Anything else is described, not shown: a
    /// file that is not a job file (a secret reached through a link, say) must not have its
    /// contents copied into errors and logs.
    public static func quotedKey(_ text: String) -> String {
        let looksLikeKey =
            !text.isEmpty && text.utf8.count <= 64
            && text.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0 == ".")
            }
        return looksLikeKey ? "'\(text)'" : "(\(text.count) characters, not shown)"
    }

    private static func yamlErrors(_ error: YamlError, yaml: String, file: String) -> [JobFileError] {
        switch error {
        case let .scanner(context, problem, mark, _),
            let .parser(context, problem, mark, _),
            let .composer(context, problem, mark, _):
            var message = "YAML syntax error: \(problem)"
            if let context { message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))" }
            return [JobFileError(SourcePosition(file: file, line: mark.line, column: mark.column), message, expected: "valid YAML")]
        case let .reader(problem, offset, _, _):
            let (line, column) = lineColumn(of: offset ?? 0, in: yaml)
            return [
                JobFileError(
                    SourcePosition(file: file, line: line, column: column),
                    "cannot read job file: \(problem)", expected: "UTF-8 text")
            ]
        case let .duplicatedKeysInMapping(duplicates, context):
            // YAML stops at the first mapping with a duplicate; the scan finds them all.
            let all = DuplicateKeyScan.duplicates(in: yaml).map {
                JobFileError(
                    SourcePosition(file: file, line: $0.line, column: $0.column),
                    "duplicate key \(quotedKey($0.key)) (first at line \($0.firstLine), column \($0.column))",
                    expected: "each key once per mapping")
            }
            if !all.isEmpty { return all }
            let mark = context.mark
            return [
                JobFileError(
                    SourcePosition(file: file, line: mark.line, column: mark.column),
                    "duplicate key \(quotedKey(duplicates.first ?? "")) in this mapping", expected: "each key once per mapping")
            ]
        default:
            return [
                JobFileError(
                    SourcePosition(file: file, line: 1, column: 1), "YAML error the parser could not place",
                    expected: "valid YAML")
            ]
        }
    }

    static func lineColumn(of offset: Int, in text: String) -> (Int, Int) {
        var line = 1
        var column = 1
        for (index, scalar) in text.unicodeScalars.enumerated() {
            if index >= offset { break }
            if scalar == "\n" { line += 1; column = 1 } else { column += 1 }
        }
        return (line, column)
    }
}
