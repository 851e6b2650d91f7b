import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird

/// `POST /api/container`: the calls of a `CloudContainer`, run in order, each as if it had come
/// alone (its own faults, counters and answer), behind the container's one wait for the latency.
extension ServerCore {
    func container(_ request: inout Request, role: ListenerRole) async throws -> Response {
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: CloudContainer.maxSize)
        } catch {
            throw CloudError(.badRequest, message: "container larger than \(CloudContainer.maxSize) bytes or unreadable")
        }
        let calls: [(call: CloudContainer.Call, body: Data)]
        do {
            calls = try CloudContainer.calls(of: Data(buffer.readableBytesView))
        } catch {
            throw CloudError(.badRequest, message: "bad container: \(error)")
        }
        var answers: [(status: Int, body: Data)] = []
        for (call, body) in calls {
            var inner = Request(
                head: HTTPRequest(method: .post, scheme: nil, authority: nil, path: Self.path(of: call), headerFields: request.headers),
                body: RequestBody(buffer: ByteBuffer(bytes: body)))
            let response: Response
            if call.method == CloudMethod.container.rawValue {
                response = HTTPSupport.error(CloudError(.methodInvalid, message: "a container cannot hold a container"))
            } else {
                response = await answer(to: &inner, name: call.method, role: role)
            }
            let collector = BodyCollector()
            try await response.body.write(collector)
            answers.append((Int(response.status.code), Data(collector.buffer.readableBytesView)))
        }
        var headers = HTTPFields()
        headers[.contentType] = CloudContainer.contentType
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try CloudContainer.answer(answers))))
    }

    /// `/api/<method>?k=v&…`: the query's names are the protocol's own and its values integers.
    private static func path(of call: CloudContainer.Call) -> String {
        let query = call.query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        return "/api/\(call.method)" + (query.isEmpty ? "" : "?" + query)
    }
}
