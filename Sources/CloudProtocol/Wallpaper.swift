/// A chat wallpaper: one image document. Parent entity `wallpaper:<id>`; refreshed with
/// `account.getWallPaper`.
public struct Wallpaper: Codable, Hashable, Sendable {
    public var id: Int64
    public var slug: String
    public var document: Document

    public init(id: Int64, slug: String, document: Document) {
        self.id = id
        self.slug = slug
        self.document = document
    }
}
