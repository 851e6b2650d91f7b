import ConfinedFiles
import Foundation

/// Errors of MediaBox, StorageBox and cleanup, each naming the path or id an operator needs.
public enum MediaBoxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed on `path`.
    case io(path: String, operation: String, errno: Int32)
    /// `fetch` was called on a MediaBox opened without a fetcher.
    case noFetcher
    /// The fetcher finished without delivering every byte of the resource.
    case incompleteFetch(id: String, have: Int64, expected: Int64?)
    /// Completion was asked for before the ranges cover the known size.
    case notComplete(path: String)
    /// The fetcher reported data past the resource's known size, or a negative offset.
    case invalidDataPart(id: String, offset: Int64, length: Int)
    /// A stored StorageBox row could not be decoded.
    case corruptIndex(String)
    /// The media directory's file system keeps no user extended attributes, where a partial
    /// file records the ranges it holds.
    case extendedAttributesUnsupported(directory: String)

    public var description: String {
        switch self {
        case let .io(path, op, e): return "\(Printable.path(path)): \(op) failed: \(Printable.errno(e))"
        case .noFetcher: return "MediaBox has no fetcher; cannot download missing resources"
        case let .incompleteFetch(id, have, expected):
            return "fetch of \(id) ended with \(have) of \(expected.map(String.init) ?? "unknown") bytes"
        case let .notComplete(path): return "\(path): ranges do not cover the resource size yet"
        case let .invalidDataPart(id, offset, length): return "fetch of \(id) delivered an invalid part at \(offset) (+\(length))"
        case let .corruptIndex(detail): return "StorageBox index row is corrupt: \(detail)"
        case let .extendedAttributesUnsupported(directory):
            return "\(Printable.path(directory)): the file system keeps no user extended attributes, where MediaBox records "
                + "the ranges of a partial download; put the media directory on ext4, XFS, btrfs or tmpfs (Linux 6.6 or later)"
        }
    }
}
