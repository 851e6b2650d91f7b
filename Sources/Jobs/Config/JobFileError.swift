import Foundation

/// A position in a job file (1-based line and column, as editors and compilers print them).
public struct SourcePosition: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(ShownText.escaped(file)):\(line):\(column)" }
}

/// One problem in a job file, printed as `file:line:column: message (expected …)`.
///
/// Every configuration error the runner reports has this shape, so an operator can jump to it.
public struct JobFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public var position: SourcePosition
    public var message: String
    /// What would have been accepted, e.g. `a duration like 30s, 5m, 1h30m, 2d`.
    public var expected: String?

    public init(_ position: SourcePosition, _ message: String, expected: String? = nil) {
        self.position = position
        self.message = message
        self.expected = expected
    }

    public var file: String { position.file }
    public var line: Int { position.line }
    public var column: Int { position.column }

    public var description: String {
        if let expected { return "\(position): \(message) (expected \(expected))" }
        return "\(position): \(message)"
    }
}

/// All problems found in one job file (or a catalog), in file order.
///
/// Validation collects every error it can instead of stopping at the first.
public struct JobFileErrors: Error, Sendable, CustomStringConvertible {
    public var errors: [JobFileError]

    public init(_ errors: [JobFileError]) {
        self.errors = errors.sorted { lhs, rhs in
            if lhs.file != rhs.file { return lhs.file < rhs.file }
            if lhs.line != rhs.line { return lhs.line < rhs.line }
            return lhs.column < rhs.column
        }
    }

    /// Exit code for a CLI reporting these errors (78, EX_CONFIG).
    public var exitCode: JobExitCode { .config }

    /// The most errors printed: a file of many mistakes (or one that is not a configuration at
    /// all) is summed up after them rather than replayed line by line.
    public static let printedLimit = 50

    public var description: String {
        let shown = errors.prefix(Self.printedLimit).map(\.description)
        let rest = errors.count - shown.count
        return (rest > 0 ? shown + ["… and \(rest) more problems"] : shown).joined(separator: "\n")
    }
}
