import Foundation

/// What a document is, for prefetch rules and cache statistics.
public enum DocumentKind: String, Codable, Sendable, CaseIterable {
    case file
    case video
    case voice
    case audio
    case sticker
    case gif
    case wallpaper
}

/// A document (file, video, voice, sticker, wallpaper image, uploaded file).
public struct Document: Codable, Hashable, Sendable {
    public var id: Int64
    public var accessHash: Int64
    public var dcId: Int
    public var kind: DocumentKind
    public var size: Int64
    public var mimeType: String
    public var fileName: String?
    /// Seconds, for video/voice/audio.
    public var duration: Int?
    /// The sticker set a sticker belongs to.
    public var stickerSetId: Int64?
    public var date: Int64
    public var location: FileLocation
    public var fileReference: Data
    /// For a streamable video: the bytes at its start a player needs first (its `moov` atom),
    /// which a client fetches before anything else. Absent for other documents.
    public var headerSize: Int64?

    public init(
        id: Int64, accessHash: Int64, dcId: Int, kind: DocumentKind, size: Int64, mimeType: String,
        fileName: String? = nil, duration: Int? = nil, stickerSetId: Int64? = nil, date: Int64,
        location: FileLocation, fileReference: Data, headerSize: Int64? = nil
    ) {
        self.headerSize = headerSize
        self.id = id
        self.accessHash = accessHash
        self.dcId = dcId
        self.kind = kind
        self.size = size
        self.mimeType = mimeType
        self.fileName = fileName
        self.duration = duration
        self.stickerSetId = stickerSetId
        self.date = date
        self.location = location
        self.fileReference = fileReference
    }
}
