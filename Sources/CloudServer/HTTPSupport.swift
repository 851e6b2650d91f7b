import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird

/// JSON encoding/decoding and error answers shared by all routes.
enum HTTPSupport {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func error(_ e: CloudError) -> Response {
        var r = json(CloudErrorEnvelope(error: e), status: HTTPResponse.Status(code: e.code))
        r.headers[HTTPField.Name(CloudHeader.error)!] = e.name.rawValue
        if case .floodWait(let s) = e.name { r.headers[.retryAfter] = String(s) }
        return r
    }

    /// Reads and decodes the JSON body (≤ 1 MiB); `BAD_REQUEST` on failure. An empty body
    /// decodes as `{}`.
    static func decode<T: Decodable>(_ type: T.Type, from request: inout Request) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: 1 << 20)
        } catch {
            throw CloudError(.badRequest, message: "body too large or unreadable")
        }
        var data = Data(buffer.readableBytesView)
        if data.isEmpty { data = Data("{}".utf8) }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw CloudError(.badRequest, message: "cannot decode \(T.self): \(error)")
        }
    }

}

extension Request {
    /// A query parameter as Int64.
    func int64Query(_ name: String) -> Int64? {
        uri.queryParameters[Substring(name)].flatMap { Int64(String($0)) }
    }
}
