import Foundation
import MediaBox

/// What the shared tier did for one resource, for a job's log and counters. Carries resource ids
/// and sizes, never a file reference or a credential.
public enum SharedMediaTierEvent: Sendable {
    /// Read from the bucket (verified) instead of the cloud.
    case readFromTier(MediaResourceId, bytes: Int64)
    /// The indexed object was missing or did not match its entry: the entry was dropped and the
    /// resource fetched from the cloud.
    case discarded(MediaResourceId, reason: String)
    /// The tier could not be asked (index or bucket unreachable): fetched from the cloud.
    case unavailable(MediaResourceId, reason: String)
    /// Completed from the cloud and published to the bucket.
    case published(MediaResourceId, bytes: Int64)
    /// Completed from the cloud, but publishing failed (the fetch itself succeeded).
    case publishFailed(MediaResourceId, reason: String)
}
