import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// A photo of a message or story with its size variants, smallest first; one file reference
/// covers all sizes (parent: the message or story).
public struct CloudPhotoMedia: CloudMedia, Equatable {
    public var photoId: Int64
    public var accessHash: Int64
    public var dcId: Int32
    /// Unix seconds.
    public var date: Int64
    public var sizes: [CloudPhotoSize]

    public init(photoId: Int64, accessHash: Int64, dcId: Int32, date: Int64, sizes: [CloudPhotoSize]) {
        self.photoId = photoId
        self.accessHash = accessHash
        self.dcId = dcId
        self.date = date
        self.sizes = sizes
    }

    /// From the protocol's photo; `obtainedAt` is when its reference arrived (Unix seconds).
    public init(_ photo: Photo, obtainedAt: Int64) {
        self.photoId = photo.id
        self.accessHash = photo.accessHash
        self.dcId = Int32(clamping: photo.dcId)
        self.date = photo.date
        self.sizes = photo.sizes.map { s in
            let resource = CloudPhotoSizeMediaResource(photo: photo, size: s, reference: .standalone)
            return CloudPhotoSize(
                type: s.type, width: Int32(clamping: s.w), height: Int32(clamping: s.h),
                file: CloudFileDescriptor(
                    resourceId: resource.id.stringRepresentation, location: s.location, size: s.size,
                    contentType: .photo, mimeType: "image/jpeg",
                    fileReference: FileReference(photo.fileReference), referenceObtainedAt: obtainedAt))
        }
    }

    public static var postboxTypeName: String { "CloudPhotoMedia" }

    public init(decoder d: PostboxDecoder) throws {
        photoId = d.decodeInt64(forKey: "i") ?? 0
        accessHash = d.decodeInt64(forKey: "h") ?? 0
        dcId = d.decodeInt32(forKey: "dc") ?? 1
        date = d.decodeInt64(forKey: "d") ?? 0
        sizes = try d.decodeObjectArray(CloudPhotoSize.self, forKey: "s")
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(photoId, forKey: "i")
        e.encode(accessHash, forKey: "h")
        e.encode(dcId, forKey: "dc")
        e.encode(date, forKey: "d")
        e.encodeObjectArray(sizes, forKey: "s")
    }

    public var id: MediaId? { MediaId(namespace: CloudMediaNamespace.photo, id: photoId) }

    public var files: [CloudFileDescriptor] { sizes.map(\.file) }

    /// The largest size variant.
    public var largest: CloudPhotoSize? { sizes.max { $0.file.size < $1.file.size } }

    /// The protocol's form, with the reference stored for the first size.
    public var photo: Photo {
        Photo(
            id: photoId, accessHash: accessHash, dcId: Int(dcId), date: date, sizes: sizes.map(\.photoSize),
            fileReference: sizes.first?.file.fileReference.bytes ?? Data())
    }

    public func resources(parent: MediaResourceReference) -> [any CloudFetchableResource] {
        let p = photo
        return p.sizes.map { CloudPhotoSizeMediaResource(photo: p, size: $0, reference: parent) }
    }

    public var description: String { "CloudPhotoMedia(\(photoId), sizes: \(sizes.map(\.type).joined(separator: ",")), \(totalSize) bytes)" }
}
