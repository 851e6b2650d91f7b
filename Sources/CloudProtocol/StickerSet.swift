import Foundation

/// A sticker set: a thumbnail plus its stickers (documents of kind `sticker`).
/// Parent entity `stickerset:<id>`; refreshed with `messages.getStickerSet`.
public struct StickerSet: Codable, Hashable, Sendable {
    public var id: Int64
    public var accessHash: Int64
    public var shortName: String
    public var title: String
    /// Location type `stickerSetThumb`.
    public var thumb: PhotoSize?
    public var stickers: [Document]
    /// Covers `thumb`; each sticker carries its own (same) reference.
    public var fileReference: Data

    public init(id: Int64, accessHash: Int64, shortName: String, title: String, thumb: PhotoSize?, stickers: [Document], fileReference: Data) {
        self.id = id
        self.accessHash = accessHash
        self.shortName = shortName
        self.title = title
        self.thumb = thumb
        self.stickers = stickers
        self.fileReference = fileReference
    }
}
