import Foundation

/// Transport errors as text for fetch errors: the kind and reason, never the URL (plain URLs
/// may carry tokens in their query).
enum TransportErrorText {
    static func describe(_ e: TransportError) -> String {
        switch e {
        case .connectFailed(_, let reason): return "cannot connect: \(reason)"
        case let .timedOut(kind, _, reason): return "\(kind.rawValue) timeout: \(reason)"
        case .tls(_, let reason): return "TLS failure: \(reason)"
        case let .connectionDropped(_, reason, received): return "connection dropped after \(received) body bytes: \(reason)"
        case let .tooLarge(limit, received): return "answer too large: \(received) bytes, limit \(limit)"
        case .rangeIgnored: return "server ignored the requested range"
        case let .writeFailed(errno, reason): return "write failed (errno \(errno)): \(reason)"
        case let .readFailed(errno, reason): return "read failed (errno \(errno)): \(reason)"
        case .invalidRequest: return "invalid request"
        case .cancelled: return "transport shut down"
        case let .other(code, reason): return "transfer failed (curl \(code)): \(reason)"
        }
    }

    /// Worth another attempt: what the transport calls retryable, plus oversize answers and
    /// ignored ranges (a misbehaving answer that may not repeat).
    static func isRetryable(_ e: TransportError) -> Bool {
        switch e {
        case .tooLarge, .rangeIgnored: return true
        default: return e.isRetryable
        }
    }

    /// Whether the failure is the server breaking the protocol rather than being unreachable.
    static func isBadAnswer(_ e: TransportError) -> Bool {
        switch e {
        case .tooLarge, .rangeIgnored: return true
        default: return false
        }
    }
}
