/// Query parameters of `POST /api/upload.saveFilePart?fileId=<id>&part=<n>` (body: raw bytes)
/// and `POST /api/upload.saveBigFilePart?fileId=<id>&part=<n>&totalParts=<t>`.
/// Answer `{"ok": true}`. Saving the same part again replaces it (safe to retry).
public enum UploadQuery {
    public static let fileId = "fileId"
    public static let part = "part"
    public static let totalParts = "totalParts"
}

/// Answer of the upload part calls.
public struct OkResponse: Codable, Hashable, Sendable {
    public var ok: Bool
    public init(ok: Bool = true) { self.ok = ok }
}

/// The uploaded file named in `messages.sendMedia` (Telegram's `InputFile`/`InputFileBig`).
public struct InputFile: Codable, Hashable, Sendable {
    /// The client-chosen random file id of the parts.
    public var id: Int64
    public var parts: Int
    public var name: String
    /// `true` if the parts were sent with `saveBigFilePart`.
    public var big: Bool
    /// Optional lowercase hex MD5 of the whole file (small mode in Telegram); checked if present.
    public var md5: String?
    /// Optional lowercase hex SHA-256 of the whole file; checked if present.
    public var sha256: String?

    public init(id: Int64, parts: Int, name: String, big: Bool, md5: String? = nil, sha256: String? = nil) {
        self.id = id
        self.parts = parts
        self.name = name
        self.big = big
        self.md5 = md5
        self.sha256 = sha256
    }
}

/// `POST /api/messages.sendMedia`: attach an uploaded file to a new message in `peerId`.
/// The same `randomId` again (for any peer) answers the message created the first time, and
/// never creates a second one — even if the parts were since forgotten.
public struct SendMediaRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public var randomId: Int64
    public var file: InputFile
    public var mimeType: String?
    public var caption: String?
    /// Pipelined send: the client sent this call while parts were still on their way, and the
    /// server waits up to this many milliseconds (at most `maxPartsWaitMs`) for every part to
    /// be stored before it answers `FILE_PART_<n>_MISSING`. Absent or 0: the parts must all be
    /// stored when the call arrives.
    public var partsWaitMs: Int?

    /// The longest `partsWaitMs` the server honours.
    public static let maxPartsWaitMs = 10_000

    public init(peerId: Int64, randomId: Int64, file: InputFile, mimeType: String? = nil, caption: String? = nil, partsWaitMs: Int? = nil) {
        self.peerId = peerId
        self.randomId = randomId
        self.file = file
        self.mimeType = mimeType
        self.caption = caption
        self.partsWaitMs = partsWaitMs
    }
}

/// Answer of `messages.sendMedia`: the message, whose single media item is the new document.
public struct SendMediaResponse: Codable, Hashable, Sendable {
    public var message: Message
    public init(message: Message) { self.message = message }
}
