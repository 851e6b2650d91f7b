import Foundation

/// An HTTP method the transport supports.
public enum HTTPMethod: String, Sendable, Equatable {
    case get = "GET", head = "HEAD", post = "POST", put = "PUT", delete = "DELETE"
}

/// One header field. Names compare case-insensitively through ``HTTPResponse/header(_:)``.
public struct HTTPHeader: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
    public var description: String { "\(name): \(value)" }

    /// Whether this header is named `other`, ignoring ASCII case: field names are ASCII tokens
    /// (RFC 9110 §5.1). Compared byte by byte; Foundation's `caseInsensitiveCompare` would go
    /// through a Unicode-aware comparison for every header of every response.
    public func isNamed(_ other: String) -> Bool {
        name.utf8.count == other.utf8.count && zip(name.utf8, other.utf8).allSatisfy { Self.lowercased($0) == Self.lowercased($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (byte &- 65) < 26 ? byte | 0x20 : byte }
}

/// A byte range to request (`CURLOPT_RANGE`): `first...last` inclusive, or from `first` to the end.
public struct HTTPRange: Sendable, Equatable, CustomStringConvertible {
    public var first: Int64
    /// Inclusive; `nil` means to the end of the resource.
    public var last: Int64?
    public init(first: Int64, last: Int64? = nil) {
        precondition(first >= 0 && (last.map { $0 >= first } ?? true), "invalid range")
        self.first = first
        self.last = last
    }
    /// `offset ..< offset + length`.
    public init(offset: Int64, length: Int64) {
        self.init(first: offset, last: offset + length - 1)
    }
    /// Number of bytes, when bounded.
    public var length: Int64? { last.map { $0 - first + 1 } }
    /// libcurl's form, without `bytes=`: `"2-5"` or `"2-"`.
    public var description: String { last.map { "\(first)-\($0)" } ?? "\(first)-" }
}

/// What to send as the request body.
public enum RequestBody: Sendable {
    /// No body.
    case none
    /// Bytes in memory.
    case data(Data)
    /// `length` bytes of an open file starting at `offset`, read with `pread` while sending (never
    /// loaded whole). The descriptor stays owned by the caller and must stay open until `send`
    /// returns.
    case fileRegion(fd: Int32, offset: Int64, length: Int64)

    var length: Int64 {
        switch self {
        case .none: return 0
        case .data(let d): return Int64(d.count)
        case .fileRegion(_, _, let length): return length
        }
    }
}

/// Where the response body goes.
///
/// For ``fileDescriptor(_:offset:maxLength:)`` and ``sink(maxLength:_:)`` only the body of a
/// successful (2xx) response is delivered; the body of any other status is collected (up to
/// 64 KiB) into ``HTTPResponse/body`` for diagnostics instead, so an error page never lands in a
/// file.
public enum ResponseDestination: Sendable {
    /// Collected into ``HTTPResponse/body``. A body larger than `maxSize` (default:
    /// ``TransportConfiguration/maxCollectedBodySize``) aborts the transfer with
    /// ``TransportError/tooLarge(limit:received:)`` — checked against `Content-Length` before any
    /// byte is buffered, and against the bytes received otherwise.
    case collect(maxSize: Int? = nil)
    /// Written with `pwrite` to `fd` at `offset`, `offset + n`, …; memory stays flat whatever the
    /// size. More than `maxLength` bytes aborts with ``TransportError/tooLarge(limit:received:)``.
    /// The descriptor stays owned by the caller.
    case fileDescriptor(Int32, offset: Int64 = 0, maxLength: Int64? = nil)
    /// Each chunk is handed to `consume` **on the transport thread running the request**, in
    /// order; it must be quick and must not block. The buffer is only valid during the call.
    /// Throwing aborts the transfer and `send` rethrows the error. Sinks of different requests may
    /// run at the same time on different threads (``TransportConfiguration/streamingThreads``):
    /// state they share must be safe to touch from both.
    case sink(maxLength: Int64? = nil, @Sendable (UnsafeRawBufferPointer) throws -> Void)
    /// Read and dropped (counted in ``HTTPResponse/bytesReceived``).
    case discard

    /// Collect with the configured default limit.
    public static var collect: ResponseDestination { .collect(maxSize: nil) }

    /// The body goes to a file or a sink as it arrives.
    var isStreamed: Bool {
        switch self {
        case .fileDescriptor, .sink: return true
        case .collect, .discard: return false
        }
    }
}

/// One HTTP request for a ``Transport``.
public struct HTTPRequest: Sendable {
    /// Absolute `http://` or `https://` URL.
    public var url: String
    public var method: HTTPMethod
    /// Extra header fields, sent as given.
    public var headers: [HTTPHeader]
    public var body: RequestBody
    /// Bytes to request; the server answers 206 with `Content-Range`. For a range starting past 0
    /// a 200 answer (server ignored the range) fails with ``TransportError/rangeIgnored`` rather
    /// than delivering the wrong bytes.
    public var range: HTTPRange?
    public var destination: ResponseDestination
    /// Total time allowed, overriding ``TransportConfiguration/requestTimeout``.
    public var timeout: Double?
    /// Compute the SHA-256 of the delivered body as it arrives, while each chunk is still in
    /// the CPU cache (``HTTPResponse/bodySHA256``), instead of reading the body again afterwards.
    public var hashBody = false
    /// A 2xx answer carrying this header field (name case-insensitive, value exact) is collected
    /// into ``HTTPResponse/body`` (up to the destination's limit) instead of going to a file or
    /// sink destination: an answer that is not the requested bytes (a redirect in JSON) never
    /// lands in the file.
    public var collectWhen: HTTPHeader? = nil
    /// Sign the request with AWS SigV4 (S3 and compatible services); `nil` sends it unsigned.
    public var awsSigV4: AWSSigV4Signing? = nil
    /// Someone waits for this answer now (a video's header at `.maximum`). While an urgent
    /// request runs, a ``CurlTransport`` holds its other transfers back: those running stop
    /// receiving (libcurl pauses them at their next chunk, so they neither take CPU nor fill the
    /// link) and new ones wait to start; all go on when the last urgent request has its answer.
    /// Meant for short requests: a long urgent transfer stalls the others for its whole length.
    public var urgent = false

    public init(
        url: String,
        method: HTTPMethod = .get,
        headers: [HTTPHeader] = [],
        body: RequestBody = .none,
        range: HTTPRange? = nil,
        destination: ResponseDestination = .collect,
        timeout: Double? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.range = range
        self.destination = destination
        self.timeout = timeout
    }

    /// A GET of `url`, optionally of a range, collected into memory.
    public static func get(_ url: String, range: HTTPRange? = nil, headers: [HTTPHeader] = []) -> HTTPRequest {
        HTTPRequest(url: url, headers: headers, range: range)
    }
}
