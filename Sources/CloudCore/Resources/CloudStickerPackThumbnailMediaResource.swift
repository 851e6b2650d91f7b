import CloudProtocol
import Foundation
import MediaBox

/// A sticker set's thumbnail. Parent: the sticker set (`messages.getStickerSet`).
/// Id `telegram-stickerpackthumbnail-<setId>-<fileId>`.
public struct CloudStickerPackThumbnailMediaResource: CloudFetchableResource, CustomStringConvertible {
    public let stickerSetId: Int64
    public let size: Int64?
    public let location: FileLocation
    /// The set's current reference (a secret; redacted).
    public let fileReference: FileReference

    /// Nil when the set has no thumbnail.
    public init?(stickerSet: StickerSet) {
        guard let thumb = stickerSet.thumb else { return nil }
        self.stickerSetId = stickerSet.id
        self.size = thumb.size
        self.location = thumb.location
        self.fileReference = FileReference(stickerSet.fileReference)
    }

    public var reference: MediaResourceReference { .stickerPack(id: stickerSetId) }

    public var id: MediaResourceId { MediaResourceId("telegram-stickerpackthumbnail-\(stickerSetId)-\(location.id)") }

    public var fetchSource: ResourceFetchSource { .cloud(location: location, fileReference: fileReference, parent: reference) }

    public var description: String { "CloudStickerPackThumbnailMediaResource(\(id), size: \(size.map(String.init) ?? "?"))" }
}
