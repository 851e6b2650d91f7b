import Foundation

/// One size variant of a photo: its own file with its own location.
public struct PhotoSize: Codable, Hashable, Sendable {
    /// `s` (100 px), `m` (320), `x` (800), `y` (1280), `w` (2560); avatars `a`/`c`.
    public var type: String
    public var w: Int
    public var h: Int
    /// Exact byte size of this variant's file.
    public var size: Int64
    public var location: FileLocation

    public init(type: String, w: Int, h: Int, size: Int64, location: FileLocation) {
        self.type = type
        self.w = w
        self.h = h
        self.size = size
        self.location = location
    }
}

/// A photo with several size variants; one file reference covers all of them.
public struct Photo: Codable, Hashable, Sendable {
    public var id: Int64
    public var accessHash: Int64
    public var dcId: Int
    public var date: Int64
    /// Smallest first.
    public var sizes: [PhotoSize]
    public var fileReference: Data

    public init(id: Int64, accessHash: Int64, dcId: Int, date: Int64, sizes: [PhotoSize], fileReference: Data) {
        self.id = id
        self.accessHash = accessHash
        self.dcId = dcId
        self.date = date
        self.sizes = sizes
        self.fileReference = fileReference
    }
}
