import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// The downloadable resources of entities, each carrying its parent.
public enum CloudResources {
    /// Every resource of a message's media: each photo size, the document, the secret file.
    public static func resources(of message: CloudProtocol.Message) -> [any CloudFetchableResource] {
        let parent = MediaResourceReference.message(MessageId(peerId: PeerId(message.peerId), id: message.id))
        return message.media.flatMap { resources(of: $0, parent: parent) }
    }

    /// The resources of one media item with the given parent.
    public static func resources(of media: MessageMedia, parent: MediaResourceReference) -> [any CloudFetchableResource] {
        switch media.type {
        case .photo:
            guard let p = media.photo else { return [] }
            return p.sizes.map { CloudPhotoSizeMediaResource(photo: p, size: $0, reference: parent) }
        case .document:
            return media.document.map { [CloudDocumentMediaResource(document: $0, reference: parent)] } ?? []
        case .secretFile:
            return media.secretFile.map { [SecretFileMediaResource(secretFile: $0)] } ?? []
        }
    }

    /// A story's media.
    public static func resources(of story: Story) -> [any CloudFetchableResource] {
        resources(of: story.media, parent: .story(peerId: PeerId(story.peerId), id: story.id))
    }

    /// A wallpaper's document.
    public static func resource(of wallpaper: Wallpaper) -> CloudDocumentMediaResource {
        CloudDocumentMediaResource(document: wallpaper.document, reference: .wallpaper(id: wallpaper.id))
    }
}
