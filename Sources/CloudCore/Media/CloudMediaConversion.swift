import CloudProtocol
import Foundation
import Postbox

/// Conversion of protocol entities (messages, peers) into what Postbox stores, with the media
/// types of this folder. `obtainedAt` (Unix seconds) stamps every file reference.
public enum CloudMediaConversion {
    /// The Postbox media of one protocol media item.
    public static func media(_ item: MessageMedia, obtainedAt: Int64) -> (any CloudMedia)? {
        switch item.type {
        case .photo: return item.photo.map { CloudPhotoMedia($0, obtainedAt: obtainedAt) }
        case .document: return item.document.map { CloudDocumentMedia($0, obtainedAt: obtainedAt) }
        case .secretFile: return item.secretFile.map { CloudSecretFileMedia($0, obtainedAt: obtainedAt) }
        }
    }

    /// The Postbox message of a protocol message (cloud namespace).
    public static func message(_ m: CloudProtocol.Message, obtainedAt: Int64) -> PostboxMessage {
        PostboxMessage(
            id: MessageId(peerId: PeerId(m.peerId), id: m.id), timestamp: Int32(clamping: m.date),
            authorId: m.fromId.map(PeerId.init), text: m.text,
            media: m.media.compactMap { media($0, obtainedAt: obtainedAt) })
    }

    /// The Postbox category of a protocol peer kind.
    public static func category(_ kind: PeerKind) -> PeerCategory {
        switch kind {
        case .contact: return .contact
        case .user: return .privateChat
        case .group: return .group
        case .channel: return .channel
        case .secretChat: return .secretChat
        }
    }

    /// The Postbox peer of a protocol peer, with its avatar.
    public static func peer(_ p: CloudProtocol.Peer, obtainedAt: Int64) -> PostboxPeer {
        PostboxPeer(
            id: PeerId(p.id), category: category(p.kind), title: p.title, username: p.username,
            photo: p.photo.map { CloudAvatarMedia(peerId: p.id, photo: $0, obtainedAt: obtainedAt) })
    }

    /// The media-reference records of a stored message: one per file that has a reference.
    public static func referenceRecords(of message: PostboxMessage) -> [MediaReferenceRecord] {
        let parent = MediaParent.message(message.id)
        return message.media.compactMap { $0 as? any CloudMedia }.flatMap { media in
            media.files.filter { !$0.fileReference.isEmpty }.map {
                MediaReferenceRecord(
                    resourceId: $0.resourceId, parent: parent, fileReference: $0.fileReference.bytes, obtainedAt: $0.referenceObtainedAt,
                    media: media.id)
            }
        }
    }

    /// The media-reference records of a stored peer's avatar.
    public static func referenceRecords(of peer: PostboxPeer) -> [MediaReferenceRecord] {
        guard let avatar = peer.photo as? CloudAvatarMedia else { return [] }
        return avatar.files.filter { !$0.fileReference.isEmpty }.map {
            MediaReferenceRecord(
                resourceId: $0.resourceId, parent: .peerAvatar(peer.id), fileReference: $0.fileReference.bytes, obtainedAt: $0.referenceObtainedAt)
        }
    }
}
