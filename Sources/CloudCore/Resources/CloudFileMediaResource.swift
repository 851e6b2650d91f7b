import CloudProtocol
import Foundation
import MediaBox

/// Any cloud file named by its `FileLocation` (Telegram-iOS's `CloudFileMediaResource`): the general
/// form the other cloud types specialise. Id `telegram-cloud-file-<type>-<dc>-<id>[-<size>]`.
public struct CloudFileMediaResource: CloudFetchableResource, CustomStringConvertible {
    public let location: FileLocation
    public let size: Int64?
    /// The parent's current reference (a secret; redacted in descriptions).
    public let fileReference: FileReference
    public let reference: MediaResourceReference

    public init(location: FileLocation, size: Int64?, fileReference: FileReference, reference: MediaResourceReference) {
        self.location = location
        self.size = size
        self.fileReference = fileReference
        self.reference = reference
    }

    public var id: MediaResourceId {
        var s = "telegram-cloud-file-\(location.type.rawValue)-\(location.dcId)-\(location.id)"
        if let t = location.thumbSize { s += "-\(t)" }
        return MediaResourceId(s)
    }

    public var fetchSource: ResourceFetchSource { .cloud(location: location, fileReference: fileReference, parent: reference) }

    public var description: String { "CloudFileMediaResource(\(id), size: \(size.map(String.init) ?? "?"), parent: \(reference))" }
}
