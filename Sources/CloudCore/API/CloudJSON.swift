import Foundation

/// The JSON coders of the protocol (base64 `Data`, numbers for ids) and a readable account of
/// why an answer did not decode — its path and what was wrong, never its content.
enum CloudJSON {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }()

    static let decoder = JSONDecoder()

    static func explain(_ error: DecodingError, bodySize: Int, expected: String) -> String {
        func path(_ context: DecodingError.Context, _ extra: CodingKey? = nil) -> String {
            let keys = context.codingPath + (extra.map { [$0] } ?? [])
            if keys.isEmpty { return "the top level" }
            return keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop(while: { $0 == "." }).description
        }
        switch error {
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "not valid JSON (\(bodySize) bytes, expected \(expected))" }
            return "invalid value at \(path(context)) (expected \(expected))"
        case .keyNotFound(let key, let context):
            return "missing field \(path(context, key)) (expected \(expected), \(bodySize) bytes)"
        case .typeMismatch(let type, let context):
            return "wrong type at \(path(context)): expected \(type) (in \(expected))"
        case .valueNotFound(let type, let context):
            return "null at \(path(context)) where \(type) is required (in \(expected))"
        @unknown default:
            return "cannot decode \(expected) (\(bodySize) bytes)"
        }
    }
}
