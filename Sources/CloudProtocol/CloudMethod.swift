/// Every API method cloudd answers, by its wire name. A call is `POST /api/<rawValue>`.
public enum CloudMethod: String, Codable, Sendable, CaseIterable {
    // Files (DC)
    case getFile = "upload.getFile"
    case getCdnFileHashes = "upload.getCdnFileHashes"
    case reuploadCdnFile = "upload.reuploadCdnFile"
    // Files (CDN)
    case getCdnFile = "upload.getCdnFile"
    // Uploads (DC)
    case saveFilePart = "upload.saveFilePart"
    case saveBigFilePart = "upload.saveBigFilePart"
    case sendMedia = "messages.sendMedia"
    /// Several calls in one request (`CloudContainer`).
    case container = "container"
    // Messages and entities (any DC)
    case getConfig = "help.getConfig"
    case getDialogs = "messages.getDialogs"
    case getHistory = "messages.getHistory"
    case getMessages = "messages.getMessages"
    case getPeerPhoto = "photos.getPeerPhoto"
    case getStickerSet = "messages.getStickerSet"
    case getAllStickers = "messages.getAllStickers"
    case getWallPaper = "account.getWallPaper"
    case getWallPapers = "account.getWallPapers"
    case getStoryById = "stories.getStoryById"
    case getPeerStories = "stories.getPeerStories"

    /// The request path, e.g. `/api/upload.getFile`.
    public var path: String { "/api/" + rawValue }

    /// Methods that re-fetch a parent entity and so hand out fresh file references.
    public var isRevalidation: Bool {
        switch self {
        case .getMessages, .getPeerPhoto, .getStickerSet, .getWallPaper, .getStoryById: return true
        default: return false
        }
    }
}

/// HTTP header names used by cloudd beyond the standard ones.
public enum CloudHeader {
    /// Hex SHA-256 of the part's bytes as the server meant to send them (before any injected
    /// corruption); on `upload.getFile` (plaintext) and `upload.getCdnFile` (ciphertext).
    public static let partSHA256 = "X-Part-SHA256"
    /// Total size of the file in bytes, on part answers and plain GET/HEAD.
    public static let fileSize = "X-File-Size"
    /// The revision of a streamable video's header (`0..<headerSize`), on its part answers:
    /// 0 until the header is first revised. Read before the part's bytes, so it never names a
    /// revision newer than the header bytes of that answer.
    public static let headerRevision = "X-Header-Revision"
    /// `part` for raw part bytes, `cdnRedirect` for a JSON CDN redirect (on `upload.getFile`).
    public static let result = "X-Cloud-Result"
    /// Seconds to wait, on FLOOD_WAIT answers.
    public static let retryAfter = "Retry-After"
    /// The error name, repeated on every error answer (also for clients that lose 3xx bodies).
    public static let error = "X-Cloud-Error"
}
