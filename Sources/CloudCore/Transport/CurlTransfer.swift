import CCurl
import CloudCrypto
import Foundation
import MediaBox

/// The state of one request while the loop runs it: the continuation to resume, the body sink,
/// the upload source, received headers and any failure a callback detected.
///
/// `@unchecked Sendable`: the calling task fills it in and hands it over through the loop's
/// locked submission queue (a happens-before edge); from then on every field except
/// `cancelRequested` is touched only on the transport loop thread (inside libcurl callbacks and
/// the loop itself). `cancelRequested` is guarded by its own lock.
final class CurlTransfer: @unchecked Sendable {
    let request: HTTPRequest
    /// Resumed exactly once, on the loop thread (or by `submit` when the loop has stopped).
    var continuation: CheckedContinuation<HTTPResponse, any Error>?

    // Limits fixed at creation.
    /// Most body bytes accepted (collect limit, or the stream's maxLength); nil: unlimited.
    let bodyLimit: Int64?

    // Loop-thread state.
    var easy: CurlEasyHandle?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var headers: [HTTPHeader] = []
    /// Set by a callback when it aborts the transfer; takes precedence over libcurl's code.
    var failure: (any Error)?
    var received: Int64 = 0
    var uploadPosition: Int64 = 0
    /// The transport's global bandwidth limiter, when limits are configured (set by the loop).
    var limiter: BandwidthLimiter?
    /// Paused by the limiter, waiting for tokens.
    var isPaused = false
    /// Which bucket paused it (send or receive).
    var pausedForSend = false
    /// The thread's hold for urgent requests (set by the loop).
    var hold: TransferHold?
    /// Paused by the hold while an urgent request runs.
    var isHeld = false
    private var statusChecked = false
    /// Body goes to the destination (2xx, or collect); otherwise kept as a short error body.
    private var deliver = true
    /// A 2xx answer with `request.collectWhen`: collected instead of streamed.
    private var collectInstead = false
    // Collected bytes (malloc'd, or a pooled part buffer, so the final Data can adopt them
    // without a copy).
    private var buffer: UnsafeMutableRawPointer?
    private var bufferCount = 0
    private var bufferCapacity = 0
    /// `buffer` came from `PartMemoryPool` (returned there, never freed).
    private var bufferPooled = false
    /// Running SHA-256 of the delivered body (`request.hashBody`).
    private var bodyHasher: BodyHasher?

    /// Bytes of a non-2xx body kept when streaming to a file or sink.
    static let errorBodyLimit = 64 << 10

    private let cancelLock = NSLock()
    private var _cancelRequested = false

    init(request: HTTPRequest, configuration: TransportConfiguration) {
        self.request = request
        // A HEAD answer has no body: its `Content-Length` is the size of one it does not send.
        switch request.destination {
        case _ where request.method == .head: bodyLimit = nil
        case .collect(let maxSize): bodyLimit = Int64(maxSize ?? configuration.maxCollectedBodySize)
        case .fileDescriptor(_, _, let maxLength): bodyLimit = maxLength
        case .sink(let maxLength, _): bodyLimit = maxLength
        case .discard: bodyLimit = nil
        }
        if request.hashBody { bodyHasher = BodyHasher() }
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        releaseBuffer()
    }

    private func releaseBuffer() {
        if bufferPooled, let buffer { PartMemoryPool.shared.give(buffer) } else { free(buffer) }
        buffer = nil
        bufferPooled = false
    }

    /// Marks the transfer cancelled (any thread).
    func requestCancel() {
        cancelLock.lock()
        _cancelRequested = true
        cancelLock.unlock()
    }

    var cancelRequested: Bool {
        cancelLock.lock()
        defer { cancelLock.unlock() }
        return _cancelRequested
    }

    // MARK: body (loop thread, from the write callback)

    /// Handles `count` body bytes at `bytes`; returns `count` to continue, CURL_WRITEFUNC_PAUSE to
    /// have libcurl hold them (bandwidth limit), anything else aborts.
    func receiveBody(_ bytes: UnsafeMutableRawPointer, _ count: Int) -> Int {
        if let hold, !hold.admitReceive(self) { return jr_writefunc_pause() }
        if let limiter, !limiter.admitReceive(self, count: count) { return jr_writefunc_pause() }
        if !statusChecked {
            statusChecked = true
            if !startBody() { return 0 }
        }
        if !deliver {
            // Error body of a streamed request: keep the start for diagnostics, drop the rest.
            let room = max(0, Self.errorBodyLimit - bufferCount)
            if room > 0 { append(bytes, min(room, count)) }
            return count
        }
        if let limit = bodyLimit, received + Int64(count) > limit {
            failure = TransportError.tooLarge(limit: limit, received: received + Int64(count))
            return 0
        }
        switch collectInstead ? .collect : request.destination {
        case .collect:
            append(bytes, count)
        case .fileDescriptor(let fd, let offset, _):
            var done = 0
            while done < count {
                let n = pwrite(fd, bytes + done, count - done, off_t(offset + received + Int64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    let e = errno
                    failure = TransportError.writeFailed(errno: e, reason: String(cString: strerror(e)))
                    return 0
                }
                done += n
            }
        case .sink(_, let consume):
            do {
                try consume(UnsafeRawBufferPointer(start: bytes, count: count))
            } catch {
                failure = error
                return 0
            }
        case .discard:
            break
        }
        bodyHasher?.sha.update(UnsafeRawBufferPointer(start: bytes, count: count))
        received += Int64(count)
        return count
    }

    /// The SHA-256 of the delivered body, if the request asked for it. Call once.
    func takeBodySHA256() -> Data? {
        guard let h = bodyHasher else { return nil }
        bodyHasher = nil
        return h.finish()
    }

    /// First body bytes: decide where they go and check declared size and range. False aborts.
    private func startBody() -> Bool {
        guard let easy else { return false }
        let status = easy.infoLong(CURLINFO_RESPONSE_CODE)
        let success = (200..<300).contains(status)
        if case .collect = request.destination {
            deliver = true
        } else {
            deliver = success
        }
        guard success else { return true }
        if let field = request.collectWhen,
            headers.contains(where: { $0.value == field.value && $0.isNamed(field.name) })
        {
            collectInstead = true
        }
        if let range = request.range, range.first > 0, status == 200 {
            failure = TransportError.rangeIgnored(url: request.url)
            return false
        }
        guard request.method != .head else { return true }  // no body to limit or to make room for
        let declared = easy.infoOffset(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
        if let limit = bodyLimit, declared > limit {
            failure = TransportError.tooLarge(limit: limit, received: declared)
            return false
        }
        if case .collect = request.destination, declared > 0 {
            if bufferCount == 0, Self.collectsIntoPartBlock(Int(declared)), let pooled = PartMemoryPool.shared.take() {
                releaseBuffer()
                buffer = pooled
                bufferPooled = true
                bufferCapacity = PartMemoryPool.blockSize
            } else {
                reserve(Int(declared))
            }
        }
        return true
    }

    /// Whether a collected body of `count` bytes goes into a `PartMemoryPool` block: a file
    /// part's size (256 KiB to 1 MiB), of which a download holds only a few at once.
    static func collectsIntoPartBlock(_ count: Int) -> Bool { count >= 256 << 10 && count <= PartMemoryPool.blockSize }

    private func reserve(_ capacity: Int) {
        guard capacity > bufferCapacity else { return }
        if bufferPooled, let pooled = buffer {
            // More than declared: move to a malloc'd buffer.
            let grown = malloc(capacity)!
            grown.copyMemory(from: pooled, byteCount: bufferCount)
            PartMemoryPool.shared.give(pooled)
            bufferPooled = false
            buffer = grown
        } else {
            buffer = realloc(buffer, capacity)
        }
        bufferCapacity = capacity
    }

    private func append(_ bytes: UnsafeMutableRawPointer, _ count: Int) {
        if bufferCount + count > bufferCapacity {
            reserve(max(bufferCount + count, max(16 << 10, bufferCapacity * 2)))
        }
        (buffer! + bufferCount).copyMemory(from: bytes, byteCount: count)
        bufferCount += count
    }

    /// The collected bytes as `Data`, adopting the buffer (no copy). Call once.
    func takeBody() -> Data {
        guard let buffer, bufferCount > 0 else { return Data() }
        self.buffer = nil
        let count = bufferCount
        bufferCount = 0
        bufferCapacity = 0
        if bufferPooled {
            bufferPooled = false
            return Data(bytesNoCopy: buffer, count: count, deallocator: .custom { p, _ in PartMemoryPool.shared.give(p) })
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
    }

    // MARK: headers (loop thread, from the header callback)

    /// One header line (with CRLF). A status line starts a new response (redirect, 100-continue).
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let colon = UInt8(ascii: ":")
        if bytes.count >= 5, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"),
            bytes[2] == UInt8(ascii: "T"), bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/")
        {
            headers.removeAll(keepingCapacity: true)
            if bodyHasher != nil { bodyHasher = BodyHasher() }
            return
        }
        guard let split = bytes.firstIndex(of: colon) else { return }  // blank line ends the head
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
        var nameEnd = split
        while nameEnd > 0, isSpace(bytes[nameEnd - 1]) { nameEnd -= 1 }
        var valueStart = split + 1
        var valueEnd = bytes.count
        while valueStart < valueEnd, isSpace(bytes[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, isSpace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        headers.append(
            HTTPHeader(
                String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<nameEnd]), as: UTF8.self),
                String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self)))
    }

    /// The declared `Content-Length` of the current response, if any (from the parsed headers).
    var declaredContentLength: Int64? {
        headers.last { $0.isNamed("Content-Length") }.flatMap { Int64($0.value) }
    }

    // MARK: upload (loop thread, from the read/seek callbacks)

    /// Fills up to `capacity` bytes of the upload body; returns the count, 0 at the end, or
    /// CURL_READFUNC_ABORT, or CURL_READFUNC_PAUSE (bandwidth limit).
    func readBody(into destination: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let remaining = request.body.length - uploadPosition
        let chunk = min(capacity, limiter?.sendChunkLimit ?? capacity)
        let count = Int(min(Int64(chunk), max(0, remaining)))
        guard count > 0 else { return 0 }
        if let limiter, !limiter.admitSend(self, count: count) { return jr_readfunc_pause() }
        switch request.body {
        case .none:
            return 0
        case .data(let data):
            data.withUnsafeBytes { raw in
                destination.copyMemory(from: raw.baseAddress! + Int(uploadPosition), byteCount: count)
            }
        case .fileRegion(let fd, let offset, _):
            var done = 0
            while done < count {
                let n = pread(fd, destination + done, count - done, off_t(offset + uploadPosition + Int64(done)))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    let e = n < 0 ? errno : 0
                    failure = TransportError.readFailed(
                        errno: e, reason: n < 0 ? String(cString: strerror(e)) : "file ended before the region did")
                    return Int(CURL_READFUNC_ABORT)
                }
                done += n
            }
        }
        uploadPosition += Int64(count)
        return count
    }

    /// Rewinds the upload body (libcurl resends it on a fresh connection or after a redirect).
    func seekBody(to position: Int64) -> Bool {
        guard position >= 0, position <= request.body.length else { return false }
        uploadPosition = position
        return true
    }
}

/// An incremental SHA-256 owned by one transfer (loop thread only).
final class BodyHasher {
    var sha = SHA256()

    /// The digest of everything fed so far.
    func finish() -> Data {
        var done = SHA256()
        swap(&done, &sha)
        return done.finalize()
    }
}
