import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// A peer's avatar (stored as `Peer.photo`): small (`a`) and big (`c`) files under one file
/// reference whose parent is the avatar (`photos.getPeerPhoto`).
public struct CloudAvatarMedia: CloudMedia, Equatable {
    public var peerId: Int64
    public var photoId: Int64
    public var dcId: Int32
    public var small: CloudPhotoSize
    public var big: CloudPhotoSize

    public init(peerId: Int64, photo: PeerPhoto, obtainedAt: Int64) {
        self.peerId = peerId
        self.photoId = photo.photoId
        self.dcId = Int32(clamping: photo.dcId)
        func size(_ s: PhotoSize, big: Bool) -> CloudPhotoSize {
            let resource = CloudPeerPhotoSizeMediaResource(peerId: peerId, photo: photo, big: big)
            return CloudPhotoSize(
                type: s.type, width: Int32(clamping: s.w), height: Int32(clamping: s.h),
                file: CloudFileDescriptor(
                    resourceId: resource.id.stringRepresentation, location: s.location, size: s.size,
                    contentType: .avatar, mimeType: "image/jpeg",
                    fileReference: FileReference(photo.fileReference), referenceObtainedAt: obtainedAt))
        }
        small = size(photo.small, big: false)
        big = size(photo.big, big: true)
    }

    public static var postboxTypeName: String { "CloudAvatarMedia" }

    public init(decoder d: PostboxDecoder) throws {
        peerId = d.decodeInt64(forKey: "p") ?? 0
        photoId = d.decodeInt64(forKey: "i") ?? 0
        dcId = d.decodeInt32(forKey: "dc") ?? 1
        guard let small = try d.decodeObject(CloudPhotoSize.self, forKey: "s"), let big = try d.decodeObject(CloudPhotoSize.self, forKey: "b") else {
            throw PostboxError.decoding("avatar without its sizes")
        }
        self.small = small
        self.big = big
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(peerId, forKey: "p")
        e.encode(photoId, forKey: "i")
        e.encode(dcId, forKey: "dc")
        e.encodeObject(small, forKey: "s")
        e.encodeObject(big, forKey: "b")
    }

    public var id: MediaId? { MediaId(namespace: CloudMediaNamespace.avatar, id: photoId) }

    public var files: [CloudFileDescriptor] { [small.file, big.file] }

    /// The protocol's form.
    public var peerPhoto: PeerPhoto {
        PeerPhoto(photoId: photoId, dcId: Int(dcId), small: small.photoSize, big: big.photoSize, fileReference: small.file.fileReference.bytes)
    }

    /// The avatar's parent is always the peer: `parent` is ignored.
    public func resources(parent: MediaResourceReference) -> [any CloudFetchableResource] {
        let p = peerPhoto
        return [CloudPeerPhotoSizeMediaResource(peerId: peerId, photo: p, big: false), CloudPeerPhotoSizeMediaResource(peerId: peerId, photo: p, big: true)]
    }

    public var description: String { "CloudAvatarMedia(peer \(peerId), photo \(photoId), \(totalSize) bytes)" }
}
