/// A peer's story with one media item. Parent entity `story:<peerId>:<id>`; refreshed with
/// `stories.getStoryById`.
public struct Story: Codable, Hashable, Sendable {
    public var id: Int32
    public var peerId: Int64
    public var date: Int64
    public var expireDate: Int64
    public var media: MessageMedia

    public init(id: Int32, peerId: Int64, date: Int64, expireDate: Int64, media: MessageMedia) {
        self.id = id
        self.peerId = peerId
        self.date = date
        self.expireDate = expireDate
        self.media = media
    }
}
