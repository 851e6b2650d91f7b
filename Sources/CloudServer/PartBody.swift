import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird

/// File-part bodies with the fault knobs applied: corruption, bandwidth pacing, dropped
/// connections and malformed lengths.
extension HTTPSupport {
    /// Cuts a part answer to half, or appends 4 KiB, keeping `X-Part-SHA256` and other headers
    /// (JSON answers pass unchanged). Applied after corruption/drop decisions.
    static func malform(_ response: Response, _ kind: MalformedAnswer) -> Response {
        guard response.headers[HTTPField.Name(CloudHeader.result)!] == "part" else { return response }
        var r = response
        let original = response.body
        let length = original.contentLength ?? 0
        let newLength = kind == .shortPart ? length / 2 : length + 4096
        r.headers[.contentLength] = String(newLength)
        r.body = ResponseBody(contentLength: newLength) { writer in
            let collector = BodyCollector()
            let body = original
            try? await body.write(collector)
            var all = collector.buffer
            if kind == .shortPart {
                all = all.getSlice(at: all.readerIndex, length: all.readableBytes / 2) ?? all
            } else {
                all.writeBytes([UInt8](repeating: 0x5A, count: 4096))
            }
            try await writer.write(all)
            try await writer.finish(nil)
        }
        return r
    }

    /// A file-part body with the fault knobs applied: corruption (one byte flipped), a bandwidth
    /// cap (chunked writes with sleeps) and a dropped connection (half the body, then the
    /// writer throws and the connection is closed).
    static func partBody(_ buffer: ByteBuffer, corrupt: Bool, drop: Bool, bandwidth: Int64) -> ResponseBody {
        var buffer = buffer
        if corrupt, buffer.readableBytes > 0 {
            let i = buffer.readerIndex + buffer.readableBytes / 2
            let b = buffer.getInteger(at: i, as: UInt8.self) ?? 0
            buffer.setInteger(b ^ 0xFF, at: i)
        }
        if !drop && bandwidth <= 0 { return ResponseBody(byteBuffer: buffer) }
        let total = buffer.readableBytes
        let frozen = buffer
        return ResponseBody(contentLength: total) { writer in
            let stopAt = drop ? total / 2 : total
            try await writeThrottled(frozen, upTo: stopAt, bandwidth: bandwidth, writer: &writer)
            if drop { throw DroppedConnection() }
            try await writer.finish(nil)
        }
    }

    /// Writes `buffer[0..<upTo]` in chunks, pacing to `bandwidth` bytes/s if set.
    static func writeThrottled(_ buffer: ByteBuffer, upTo: Int, bandwidth: Int64, writer: inout any ResponseBodyWriter) async throws {
        let chunk = throttleChunk(bandwidth: bandwidth, unthrottled: 64 << 10)
        var sent = 0
        let pacer = Pacer(bandwidth: bandwidth)
        while sent < upTo {
            let n = min(chunk, upTo - sent)
            try await pacer.wait(untilSent: Int64(sent + n))
            try await writer.write(buffer.getSlice(at: buffer.readerIndex + sent, length: n)!)
            sent += n
        }
    }

    /// Chunk size for a paced body: about 1/20 s of data (4…64 KiB), so the pacing error is small.
    static func throttleChunk(bandwidth: Int64, unthrottled: Int) -> Int {
        bandwidth > 0 ? Int(max(4096, min(Int64(64 << 10), bandwidth / 20))) : unthrottled
    }
}

/// Collects a response body in memory (for `malform`).
final class BodyCollector: ResponseBodyWriter, @unchecked Sendable {
    var buffer = ByteBuffer()
    func write(_ buffer: ByteBuffer) async throws {
        var b = buffer
        self.buffer.writeBuffer(&b)
    }
    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// Thrown inside a response body writer to close the connection mid-body (drop fault).
struct DroppedConnection: Error {}
