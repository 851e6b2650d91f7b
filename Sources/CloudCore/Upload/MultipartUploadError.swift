import Foundation

/// Why an upload (or an enqueue) failed. Messages name the item, paths, sizes and server error
/// names only — never a key, IV, token or file reference.
public enum MultipartUploadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file to enqueue does not exist.
    case fileNotFound(path: String)
    /// The file exists but cannot be read (permissions, I/O error), or is not a regular file.
    case fileUnreadable(path: String, reason: String)
    /// Zero bytes: the protocol has no empty uploads (every part is 1 byte … part size).
    case emptyFile(path: String)
    /// Larger than 8000 parts of 512 KiB.
    case fileTooLarge(path: String, size: Int64)
    /// The peer does not exist (not among the synced peers, or the server answered `PEER_ID_INVALID`).
    case peerNotFound(peerId: Int64, reason: String)
    /// No queue item with this id.
    case itemNotFound(Int64)
    /// The staged copy inside the data root is gone.
    case stagedFileMissing(item: Int64, path: String)
    /// The staged file's size or content differs from what was recorded at enqueue time.
    case fileChanged(item: Int64, reason: String)
    /// Another process took the item's lease (ours expired): stop without touching it.
    case leaseLost(item: Int64, holder: String)
    /// The item's stored layout or secret key is damaged.
    case corruptItem(item: Int64, reason: String)
    /// The server refused the upload for good (e.g. the parts kept going missing).
    case rejected(item: Int64, reason: String)
    /// A part or the final send failed after the client's own retries; the next attempt resumes.
    case transient(item: Int64, reason: String)
    /// The cloud could not be reached (after the client's retries); the item stays queued.
    case cloudUnavailable(item: Int64, reason: String)
    /// Staging the file into the data root failed.
    case staging(path: String, reason: String)
    /// A store the upload needs refused this host's credentials or configuration (a wrong
    /// secret, a missing bucket): no item is at fault, and none can be sent until it is fixed.
    case misconfigured(item: Int64, reason: String)

    /// True when trying again cannot help (the item should end as failed).
    public var isPermanent: Bool {
        switch self {
        case .transient, .leaseLost, .cloudUnavailable, .misconfigured: return false
        default: return true
        }
    }

    public var description: String {
        switch self {
        case .fileNotFound(let path): return "no such file: \(path)"
        case let .fileUnreadable(path, reason): return "cannot read \(path): \(reason)"
        case .emptyFile(let path): return "\(path) is empty (0 bytes): the cloud has no empty uploads, nothing to send"
        case let .fileTooLarge(path, size):
            return "\(path) is \(size) bytes, more than the \(UploadPlan.maxSize) bytes (8000 parts of 512 KiB) an upload may have"
        case let .peerNotFound(peer, reason): return "peer \(peer) does not exist (\(reason))"
        case .itemNotFound(let id): return "no upload queue item \(id)"
        case let .stagedFileMissing(item, path): return "item \(item): the staged file \(path) is gone"
        case let .fileChanged(item, reason): return "item \(item): the file changed while queued (\(reason))"
        case let .leaseLost(item, holder): return "item \(item): lease taken over by \(holder.isEmpty ? "another process" : holder)"
        case let .corruptItem(item, reason): return "item \(item): damaged queue record (\(reason))"
        case let .rejected(item, reason): return "item \(item): upload refused: \(reason)"
        case let .transient(item, reason): return "item \(item): \(reason)"
        case let .cloudUnavailable(item, reason): return "item \(item): \(reason)"
        case let .staging(path, reason): return "cannot stage \(path): \(reason)"
        case let .misconfigured(item, reason): return "item \(item): \(reason)"
        }
    }
}
