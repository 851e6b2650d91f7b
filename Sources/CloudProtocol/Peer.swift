import Foundation

/// The kind of a chat peer.
public enum PeerKind: String, Codable, Sendable, CaseIterable {
    /// A user in the contact list.
    case contact
    /// A user not in the contact list.
    case user
    case group
    case channel
    /// An end-to-end encrypted chat; its files are `SecretFile`s.
    case secretChat
}

/// A peer (user, group, channel, secret chat) with its avatar, if any.
public struct Peer: Codable, Hashable, Sendable {
    /// Unique across kinds (< 2^53).
    public var id: Int64
    public var kind: PeerKind
    public var title: String
    public var username: String?
    /// The avatar; its `fileReference` is fresh each time the peer is fetched.
    public var photo: PeerPhoto?

    public init(id: Int64, kind: PeerKind, title: String, username: String? = nil, photo: PeerPhoto? = nil) {
        self.id = id
        self.kind = kind
        self.title = title
        self.username = username
        self.photo = photo
    }
}

/// A peer's avatar: a small (`a`, 160 px) and a big (`c`, 640 px) file, one reference for both.
/// Parent entity: `avatar:<peerId>`; refreshed with `photos.getPeerPhoto`.
public struct PeerPhoto: Codable, Hashable, Sendable {
    public var photoId: Int64
    public var dcId: Int
    public var small: PhotoSize
    public var big: PhotoSize
    public var fileReference: Data

    public init(photoId: Int64, dcId: Int, small: PhotoSize, big: PhotoSize, fileReference: Data) {
        self.photoId = photoId
        self.dcId = dcId
        self.small = small
        self.big = big
        self.fileReference = fileReference
    }
}
