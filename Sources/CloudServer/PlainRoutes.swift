import CloudCrypto
import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird

/// `GET|HEAD /plain/<fileId>` with standard Range support, so curl and aria2c fetch the same
/// bytes as the protocol client. Bodies are generated in 256 KiB chunks as they are written.
/// `?prefix=N` serves the first N bytes as if they were the whole file: a tool without a
/// byte-range option (aria2c) fetches a prefix that way.
extension ServerCore {
    func plain(_ request: Request, idString: Substring) async throws -> Response {
        guard let id = Int64(idString), let file = file(id) else {
            return Response(status: .notFound, headers: [.contentType: "text/plain"], body: ResponseBody(byteBuffer: ByteBuffer(string: "no such file\n")))
        }
        let isHead = request.method == .head
        counters.method(isHead ? "plain.head" : "plain.get")
        var headers = HTTPFields()
        headers[.acceptRanges] = "bytes"
        headers[.contentType] = "application/octet-stream"
        headers[HTTPField.Name(CloudHeader.fileSize)!] = String(file.size)
        let size = request.int64Query("prefix").map { min(max(0, $0), file.size) } ?? file.size
        let range: Range<Int64>
        var status = HTTPResponse.Status.ok
        switch ByteRange.parse(request.headers[.range], size: size) {
        case .full:
            range = 0..<size
        case .partial(let r):
            range = r
            status = .partialContent
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(size)"
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        headers[.contentLength] = String(range.count)
        if isHead { return Response(status: status, headers: headers, body: ResponseBody()) }
        if case .error(let e) = faults.rollError(isRevalidation: false) {
            throw CloudError(e)
        }
        let k = faults.current
        let drop = faults.rollDrop()
        let corrupt = faults.rollCorrupt()
        let bytes = self.bytes
        let counters = self.counters
        let total = range.count
        let body = ResponseBody(contentLength: Int(total)) { writer in
            let chunk = Int64(HTTPSupport.throttleChunk(bandwidth: k.bandwidth, unthrottled: 256 << 10))
            var off = range.lowerBound
            let stopAt = drop ? range.lowerBound + Int64(total) / 2 : range.upperBound
            let pacer = k.networkDelay.pacer()
            var corruptPending = corrupt
            var counted = false
            while off < stopAt {
                let n = Int(min(chunk, stopAt - off))
                try await pacer.wait(untilSent: off + Int64(n) - range.lowerBound)
                var buffer = ByteBufferAllocator().buffer(capacity: n)
                try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: n) { ptr in
                    try bytes.read(file, offset: off, into: UnsafeMutableRawBufferPointer(rebasing: ptr[0..<n]))
                    return n
                }
                if corruptPending {
                    corruptPending = false
                    let b = buffer.getInteger(at: n / 2, as: UInt8.self) ?? 0
                    buffer.setInteger(b ^ 0xFF, at: n / 2)
                }
                if off + Int64(n) == stopAt {
                    // Counted before the last bytes leave: a client holding every byte finds
                    // the request counted.
                    counters.filePart(file.id, bytes: stopAt - range.lowerBound, offset: range.lowerBound)
                    counted = true
                }
                try await writer.write(buffer)
                off += Int64(n)
            }
            if !counted { counters.filePart(file.id, bytes: 0, offset: range.lowerBound) }
            if drop { throw DroppedConnection() }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }
}
