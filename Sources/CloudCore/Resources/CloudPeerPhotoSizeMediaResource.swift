import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// A peer's avatar, small (`a`) or big (`c`). Parent: the avatar (`photos.getPeerPhoto`).
/// Id `telegram-peer-photo-size-<dc>-<peerId>-<photoId>-<sizeSpec>`.
public struct CloudPeerPhotoSizeMediaResource: CloudFetchableResource, CustomStringConvertible {
    public let datacenterId: Int
    public let peerId: Int64
    public let photoId: Int64
    public let sizeSpec: String
    public let size: Int64?
    public let location: FileLocation
    /// The avatar's current reference (a secret; redacted).
    public let fileReference: FileReference

    /// `big: false` picks the small size (`a`).
    public init(peerId: Int64, photo: PeerPhoto, big: Bool) {
        let s = big ? photo.big : photo.small
        self.datacenterId = photo.dcId
        self.peerId = peerId
        self.photoId = photo.photoId
        self.sizeSpec = s.type
        self.size = s.size
        self.location = s.location
        self.fileReference = FileReference(photo.fileReference)
    }

    public var reference: MediaResourceReference { .avatar(PeerId(peerId)) }

    public var id: MediaResourceId { MediaResourceId("telegram-peer-photo-size-\(datacenterId)-\(peerId)-\(photoId)-\(sizeSpec)") }

    public var fetchSource: ResourceFetchSource { .cloud(location: location, fileReference: fileReference, parent: reference) }

    public var description: String { "CloudPeerPhotoSizeMediaResource(\(id), size: \(size.map(String.init) ?? "?"))" }
}
