import Foundation

/// Why a request failed at the transport level (HTTP statuses are not errors: they come back in
/// ``HTTPResponse/status``). Task cancellation is reported as `CancellationError`, not as this.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which limit ran out.
    public enum TimeoutKind: String, Sendable, Equatable {
        /// The connection (TCP + TLS) was not established in time.
        case connect
        /// Too few bytes moved for too long (``TransportConfiguration/idleTimeout``).
        case idle
        /// The whole request took longer than its total timeout.
        case total
    }

    /// Could not resolve the host or connect to it (refused, unreachable).
    case connectFailed(url: String, reason: String)
    /// A timeout fired.
    case timedOut(TimeoutKind, url: String, reason: String)
    /// TLS handshake or certificate verification failed.
    case tls(url: String, reason: String)
    /// The connection broke mid-transfer: partial body, receive/send error, empty reply, HTTP/2
    /// stream reset. `received` body bytes had been delivered.
    case connectionDropped(url: String, reason: String, received: Int64)
    /// The body exceeded the allowed size (`received` is the declared or received size so far).
    case tooLarge(limit: Int64, received: Int64)
    /// A range starting past 0 was requested but the server answered 200 with the whole resource.
    case rangeIgnored(url: String)
    /// Writing the body to the file descriptor failed (`errno`).
    case writeFailed(errno: Int32, reason: String)
    /// Reading the upload body from the file descriptor failed (`errno`).
    case readFailed(errno: Int32, reason: String)
    /// The request cannot be sent as given (bad URL, unsupported scheme, option refused).
    case invalidRequest(String)
    /// The transport was shut down before the request finished.
    case cancelled
    /// Any other libcurl failure.
    case other(code: Int, reason: String)

    /// Whether sending the same request again may succeed.
    public var isRetryable: Bool {
        switch self {
        case .connectFailed, .timedOut, .connectionDropped: return true
        case .other(let code, _): return code == Int(CURLE_AGAIN_RAW)  // transient "try again"
        case .tls, .tooLarge, .rangeIgnored, .writeFailed, .readFailed, .invalidRequest, .cancelled:
            return false
        }
    }

    public var description: String {
        switch self {
        case let .connectFailed(url, reason): return "cannot connect for \(url): \(reason)"
        case let .timedOut(kind, url, reason): return "\(kind.rawValue) timeout for \(url): \(reason)"
        case let .tls(url, reason): return "TLS failure for \(url): \(reason)"
        case let .connectionDropped(url, reason, received):
            return "connection dropped for \(url) after \(received) body bytes: \(reason)"
        case let .tooLarge(limit, received): return "response body too large: \(received) bytes, limit \(limit)"
        case let .rangeIgnored(url): return "server ignored the requested range for \(url) (answered 200)"
        case let .writeFailed(errno, reason): return "writing the body failed (errno \(errno)): \(reason)"
        case let .readFailed(errno, reason): return "reading the upload body failed (errno \(errno)): \(reason)"
        case let .invalidRequest(reason): return "invalid request: \(reason)"
        case .cancelled: return "transport shut down before the request finished"
        case let .other(code, reason): return "transfer failed (curl \(code)): \(reason)"
        }
    }
}

/// CURLE_AGAIN's raw value (kept here so the error type does not expose CCurl).
let CURLE_AGAIN_RAW: Int32 = 81
