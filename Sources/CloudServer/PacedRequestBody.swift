import Hummingbird
import NIOCore

/// A request body read no faster than a bandwidth: each buffer is handed on once the time its
/// last byte would take at that rate, counted from the first read, has passed (`Pacer`, the
/// same pace answers get). A link's bandwidth holds in both directions, so an upload, a part
/// or a single `PUT`, meets the same link as a download; the client's sends wait on TCP's
/// flow control meanwhile, as they would on a slow link.
struct PacedRequestBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let bandwidth: Int64

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let pacer: Pacer
        var received: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let buffer = try await base.next() else { return nil }
            received += Int64(buffer.readableBytes)
            try await pacer.wait(untilSent: received)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), pacer: Pacer(bandwidth: bandwidth))
    }
}

extension NetworkDelay {
    /// `body`, read at this delay's bandwidth (unchanged when unpaced).
    func paced(_ body: RequestBody) -> RequestBody {
        bandwidth > 0 ? RequestBody(asyncSequence: PacedRequestBody(base: body, bandwidth: bandwidth)) : body
    }
}
