import CloudProtocol
import Foundation
import MediaBox

/// Why `MultipartFetch` could not deliver a resource. Messages name resource ids, offsets,
/// sizes and error names only: never a file reference, key, token or URL.
public enum MultipartFetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The resource is not one `MultipartFetch` knows (not a `CloudFetchableResource`).
    case unsupportedResource(MediaResourceId)
    /// The file reference expired and no revalidator was given (or it still failed after
    /// revalidation). The revalidation layer re-fetches `parent` and retries.
    case fileReferenceExpired(resourceId: MediaResourceId, parent: MediaResourceReference)
    /// The server answered with an error that retrying cannot fix (`LOCATION_INVALID`,
    /// `LIMIT_INVALID`, an unknown name, a `FLOOD_WAIT` longer than allowed, …).
    case server(resourceId: MediaResourceId, name: CloudErrorName, status: Int)
    /// The server kept answering in a way that breaks the protocol (wrong length, oversize body,
    /// bad JSON, missing headers, failed checksums) after every retry. Nothing of it was stored.
    case badAnswer(resourceId: MediaResourceId, offset: Int64, reason: String)
    /// The server's size for the file differs from the one the resource declares.
    case sizeMismatch(resourceId: MediaResourceId, expected: Int64, served: Int64)
    /// Transport failures (refused, timeouts, dropped connections) or 5xx on every attempt.
    case unavailable(resourceId: MediaResourceId, offset: Int64, attempts: Int, reason: String)
    /// A transport failure retrying cannot fix (TLS, invalid request).
    case transport(resourceId: MediaResourceId, reason: String)
    /// A secret file's key does not match its fingerprint.
    case keyFingerprintMismatch(resourceId: MediaResourceId)
    /// The DC named by the location or a `FILE_MIGRATE` is not configured.
    case unknownDatacenter(resourceId: MediaResourceId, dc: Int)
    /// Too many `FILE_MIGRATE` answers in a row (a loop between DCs).
    case tooManyMigrations(resourceId: MediaResourceId)

    public var description: String {
        switch self {
        case .unsupportedResource(let id): return "\(id): not a cloud resource MultipartFetch can fetch"
        case let .fileReferenceExpired(id, parent): return "\(id): file reference expired (parent \(parent))"
        case let .server(id, name, status): return "\(id): server answered \(status) \(name.rawValue)"
        case let .badAnswer(id, offset, reason): return "\(id): bad answer for the part at \(offset): \(reason)"
        case let .sizeMismatch(id, expected, served): return "\(id): server size \(served) differs from the expected \(expected)"
        case let .unavailable(id, offset, attempts, reason): return "\(id): part at \(offset) failed after \(attempts) attempts: \(reason)"
        case let .transport(id, reason): return "\(id): \(reason)"
        case .keyFingerprintMismatch(let id): return "\(id): secret file key does not match its fingerprint"
        case let .unknownDatacenter(id, dc): return "\(id): DC \(dc) is not configured"
        case .tooManyMigrations(let id): return "\(id): too many FILE_MIGRATE answers"
        }
    }
}
