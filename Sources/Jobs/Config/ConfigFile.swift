import Foundation

/// Reads every file jobrun takes settings from — job files, an account's `config.yaml`,
/// `cluster.yaml`, the credentials and password files they name, the notes under `alerts/` and
/// `suspended/` — with the same protections: a regular file of bounded size, UTF-8 (a leading
/// byte-order mark is skipped), no NUL byte; and YAML without anchors or aliases. Every
/// problem is a positioned `JobFileError` naming the file (escaped), never its contents.
public enum ConfigFile {
    /// The text of the file at `path` (`shown` names it in errors); `what` says what it is
    /// ("job file", "cloud configuration").
    public static func text(at path: String, shown: String? = nil, limit: Int, what: String) throws(JobFileErrors) -> String {
        let origin = SourcePosition(file: shown ?? path, line: 1, column: 1)
        switch SmallFile.read(path, limit: limit) {
        case .success(let bytes):
            return try text(of: bytes, origin: origin, what: what)
        case .failure(let problem):
            if case .tooLarge = problem {
                throw JobFileErrors([
                    JobFileError(
                        origin, "\(what) is larger than \(ByteSize.human(Int64(limit))) (\(problem.message))",
                        expected: "a \(what) of at most \(ByteSize.human(Int64(limit)))")
                ])
            }
            throw JobFileErrors([JobFileError(origin, "cannot read \(what): \(problem.message)", expected: "a readable file")])
        }
    }

    /// Bytes as text: UTF-8, a leading byte-order mark skipped, no NUL byte.
    static func text(of bytes: [UInt8], origin: SourcePosition, what: String) throws(JobFileErrors) -> String {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let text = String(validating: body, as: UTF8.self) else {
            throw JobFileErrors([JobFileError(origin, "\(what) is not valid UTF-8", expected: "UTF-8 text")])
        }
        if body.contains(0), let nul = text.unicodeScalars.firstIndex(of: "\0") {
            let (line, column) = ConfigNode.lineColumn(of: text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: nul), in: text)
            throw JobFileErrors([
                JobFileError(SourcePosition(file: origin.file, line: line, column: column), "\(what) holds a NUL byte", expected: "text")
            ])
        }
        return text
    }

    /// The first line of a file holding one secret (a token, a password), trimmed; the file's
    /// contents are never part of an error.
    public static func firstLine(at path: String, limit: Int, what: String) throws(JobFileErrors) -> String {
        let text = try text(at: path, limit: limit, what: what)
        let first = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        if first.isEmpty {
            throw JobFileErrors([JobFileError(SourcePosition(file: path, line: 1, column: 1), "the \(what) is empty", expected: "one line")])
        }
        return first
    }
}
