import Foundation

/// Several calls in one request, run by the server in order, each answered as if it had been
/// sent alone, all in one round trip: the role MTProto's `msg_container` plays. A small upload
/// sends its one part and its `messages.sendMedia` in one container, so a file costs one request
/// instead of two (see `docs/cloud-protocol.md`, §7).
///
/// Wire form, the request's and the answer's alike: one line of JSON (the header) ending in
/// `\n`, then the bodies back to back, in the header's order, each as long as its `length`.
/// - request (`POST /api/container`): `{"calls": [{"method": "upload.saveFilePart", "query":
///   {"fileId": 1, "part": 0}, "length": 1234}, {"method": "messages.sendMedia", "query": {},
///   "length": 180}]}`; each body is what the call would carry alone;
/// - answer (200 when the container was read): `{"answers": [{"status": 200, "length": 11}, …]}`;
///   each body is the call's own answer, an error's envelope included.
public enum CloudContainer {
    /// The container's content type.
    public static let contentType = "application/x-cloud-container"
    /// Most calls in one container.
    public static let maxCalls = 8
    /// Most bytes of a container request: a full part (512 KiB) and its `sendMedia`, with room.
    public static let maxSize = 2 << 20

    /// One call of a request.
    public struct Call: Codable, Sendable, Equatable {
        public var method: String
        public var query: [String: Int64]
        public var length: Int
    }

    /// One call's answer.
    public struct Answer: Codable, Sendable, Equatable {
        public var status: Int
        public var length: Int
    }

    private struct RequestHeader: Codable { var calls: [Call] }
    private struct AnswerHeader: Codable { var answers: [Answer] }

    /// Why a container could not be read.
    public struct FormatError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The request body carrying `calls`: each a method, its query and its body.
    public static func request(_ calls: [(method: CloudMethod, query: [(String, Int64)], body: Data)]) throws -> Data {
        let header = RequestHeader(
            calls: calls.map { call in
                Call(method: call.method.rawValue, query: Dictionary(call.query, uniquingKeysWith: { $1 }), length: call.body.count)
            })
        return try frame(header, calls.map(\.body))
    }

    /// The calls of a request body, with their bodies.
    public static func calls(of data: Data) throws -> [(call: Call, body: Data)] {
        let (header, rest) = try unframe(RequestHeader.self, data)
        guard !header.calls.isEmpty, header.calls.count <= maxCalls else {
            throw FormatError(description: "a container holds 1…\(maxCalls) calls, not \(header.calls.count)")
        }
        // Query names are the protocol's own, plain letters (they become a query string).
        guard header.calls.allSatisfy({ $0.query.keys.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isLetter } } }) else {
            throw FormatError(description: "a query name that is not plain letters")
        }
        return try zip(header.calls, split(rest, header.calls.map(\.length))).map { ($0, $1) }
    }

    /// The answer body carrying each call's status and body.
    public static func answer(_ answers: [(status: Int, body: Data)]) throws -> Data {
        try frame(AnswerHeader(answers: answers.map { Answer(status: $0.status, length: $0.body.count) }), answers.map(\.body))
    }

    /// Each call's status and body from an answer body.
    public static func answers(of data: Data) throws -> [(status: Int, body: Data)] {
        let (header, rest) = try unframe(AnswerHeader.self, data)
        return try zip(header.answers, split(rest, header.answers.map(\.length))).map { ($0.status, $1) }
    }

    private static func frame(_ header: some Encodable, _ bodies: [Data]) throws -> Data {
        var out = try JSONEncoder().encode(header)
        out.append(UInt8(ascii: "\n"))
        for body in bodies { out.append(body) }
        return out
    }

    private static func unframe<Header: Decodable>(_ type: Header.Type, _ data: Data) throws -> (Header, Data) {
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { throw FormatError(description: "no header line") }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: data[data.startIndex..<newline])
        } catch {
            throw FormatError(description: "unreadable header: \(error)")
        }
        return (header, data[(newline + 1)...])
    }

    private static func split(_ data: Data, _ lengths: [Int]) throws -> [Data] {
        // Each length is checked first, so that the sum cannot overflow (at most `maxCalls` of them).
        guard lengths.allSatisfy({ $0 >= 0 && $0 <= data.count }), lengths.reduce(0, +) == data.count else {
            throw FormatError(description: "the bodies' lengths do not add up to the \(data.count) bytes that follow the header")
        }
        var at = data.startIndex
        return lengths.map { n in
            defer { at += n }
            return Data(data[at..<(at + n)])
        }
    }
}
