import Foundation
import Postbox

/// Why a file reference could not be revalidated. Messages name resource ids, parent entities
/// and error names only — never reference bytes.
public enum RevalidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The parent no longer holds the file (message deleted, avatar changed, set removed): the
    /// resource is marked gone in Postbox and is not retried. Not retryable.
    case gone(resourceId: String, parent: MediaResourceReference)
    /// No answer within the waiter's bound; the request may still complete for later waiters.
    case timedOut(parent: MediaResourceReference, seconds: Double)
    /// The revalidation call failed; retried after a backoff.
    case failed(parent: MediaResourceReference, reason: String, cloudUnavailable: Bool)
    /// A recent revalidation of this parent failed (here or in another process) and its
    /// backoff has not elapsed; nothing was sent.
    case backingOff(parent: MediaResourceReference, reason: String, retryIn: Double, cloudUnavailable: Bool)
    /// The resource has no parent entity to re-fetch (secret files, plain URLs).
    case noParent(resourceId: String)
    /// Postbox could not record or read the coordination state.
    case storage(parent: MediaResourceReference, reason: String)

    /// True when the cloud was unreachable or failing (exit 69 for a job).
    public var isCloudUnavailable: Bool {
        switch self {
        case .failed(_, _, let u), .backingOff(_, _, _, let u): return u
        case .timedOut: return true
        default: return false
        }
    }

    /// True for `gone`: retrying can never help.
    public var isGone: Bool { if case .gone = self { return true } else { return false } }

    public var description: String {
        switch self {
        case let .gone(id, parent): return "\(id): parent \(parent) no longer holds the file (gone; not retried)"
        case let .timedOut(parent, seconds): return "revalidation of \(parent) gave no answer within \(Self.format(seconds))s"
        case let .failed(parent, reason, _): return "revalidation of \(parent) failed: \(reason)"
        case let .backingOff(parent, reason, retryIn, _):
            return "revalidation of \(parent) failed recently (\(reason)); next attempt in \(Self.format(retryIn))s"
        case .noParent(let id): return "\(id): no parent entity to revalidate the reference through"
        case let .storage(parent, reason): return "revalidation of \(parent): Postbox: \(reason)"
        }
    }

    static func format(_ s: Double) -> String { String(format: "%.1f", s) }
}
