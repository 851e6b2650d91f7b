import CloudProtocol
import Foundation

/// Why a `CloudClient` call failed. Never carries a secret (no token, no file reference, no
/// answer body): messages name the method, the DC, sizes and error names only.
public enum CloudClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with a protocol error (`FILE_REFERENCE_EXPIRED`, `PEER_ID_INVALID`,
    /// a `FLOOD_WAIT` longer than the policy allows, `INTERNAL` after every retry, …).
    case server(CloudError, method: String, dc: String)
    /// The answer broke the protocol: not JSON, the wrong shape, an unknown error name, too
    /// large, inconsistent with the request. Nothing from it may be stored.
    case badAnswer(method: String, dc: String, reason: String)
    /// The cloud could not be reached (connect failure, timeouts, dropped connections) after
    /// every retry.
    case unavailable(method: String, dc: String, attempts: Int, underlying: TransportError)
    /// A transport failure that retrying cannot fix (TLS, invalid request, local I/O).
    case transport(method: String, dc: String, underlying: TransportError)
    /// The configuration cannot serve the call (unknown DC, no CDN URL, invalid values).
    case config(String)
    /// The call was asked with arguments the protocol forbids (caught before sending).
    case invalidRequest(String)

    /// The protocol error, when the server answered with one.
    public var cloudError: CloudError? {
        if case .server(let e, _, _) = self { return e }
        return nil
    }

    /// The server's error name, when it answered with one.
    public var errorName: CloudErrorName? { cloudError?.name }

    /// True when the cloud is not usable right now (unreachable, or still failing with 5xx after
    /// every retry): a job maps this to exit 69 and may try again later.
    public var isCloudUnavailable: Bool {
        switch self {
        case .unavailable: return true
        case .server(let e, _, _): return e.code >= 500
        default: return false
        }
    }

    public var description: String {
        switch self {
        case let .server(e, method, dc): return "\(method) at \(dc) failed: \(e.code) \(e.name.rawValue)"
        case let .badAnswer(method, dc, reason): return "bad answer to \(method) from \(dc): \(reason)"
        case let .unavailable(method, dc, attempts, underlying):
            return "cloud unavailable: \(method) at \(dc) failed after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(underlying)"
        case let .transport(method, dc, underlying): return "\(method) at \(dc) failed: \(underlying)"
        case let .config(message): return "cloud configuration: \(message)"
        case let .invalidRequest(message): return "invalid cloud request: \(message)"
        }
    }
}
