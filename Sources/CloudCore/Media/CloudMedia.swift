import Foundation
import MediaBox
import Postbox

/// A Postbox `Media` that holds cloud files: what `HistorySync` stores in messages and peers
/// and what prefetch, revalidation and cleanup read back.
public protocol CloudMedia: Media, CustomStringConvertible {
    /// Every downloadable file of this media item, with its reference (empty for secret files).
    var files: [CloudFileDescriptor] { get }
    /// The resources MultipartFetch downloads, each carrying `parent` (for revalidation).
    func resources(parent: MediaResourceReference) -> [any CloudFetchableResource]
}

/// Media id namespaces of the cloud media types (`MediaId.namespace`): stable, on disk.
public enum CloudMediaNamespace {
    public static let photo: Int32 = 1
    public static let document: Int32 = 2
    public static let secretFile: Int32 = 3
    public static let avatar: Int32 = 4
}

extension CloudMedia {
    /// Total bytes of the files.
    public var totalSize: Int64 { files.reduce(0) { $0 + $1.size } }
}
