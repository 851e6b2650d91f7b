import CloudProtocol
import Foundation
import MediaBox

/// One size variant (`s m x y w`) of a message or story photo.
/// Id `telegram-cloud-photo-size-<dc>-<photoId>-<sizeSpec>`.
public struct CloudPhotoSizeMediaResource: CloudFetchableResource, CustomStringConvertible {
    public let datacenterId: Int
    public let photoId: Int64
    public let sizeSpec: String
    public let size: Int64?
    public let location: FileLocation
    /// The photo's current reference, shared by all its sizes (a secret; redacted).
    public let fileReference: FileReference
    public let reference: MediaResourceReference

    public init(photo: Photo, size: PhotoSize, reference: MediaResourceReference) {
        self.datacenterId = photo.dcId
        self.photoId = photo.id
        self.sizeSpec = size.type
        self.size = size.size
        self.location = size.location
        self.fileReference = FileReference(photo.fileReference)
        self.reference = reference
    }

    public var id: MediaResourceId { MediaResourceId("telegram-cloud-photo-size-\(datacenterId)-\(photoId)-\(sizeSpec)") }

    public var fetchSource: ResourceFetchSource { .cloud(location: location, fileReference: fileReference, parent: reference) }

    public var description: String { "CloudPhotoSizeMediaResource(\(id), size: \(size.map(String.init) ?? "?"), parent: \(reference))" }
}
