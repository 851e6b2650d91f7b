/// `GET /admin/counters`: request counts since start or the last reset.
public struct CountersResponse: Codable, Hashable, Sendable {
    /// Per method wire name (`upload.getFile`, …) plus `plain.get`, `plain.head`, `plain.upload`.
    public var methods: [String: Int]
    /// Revalidation calls (getMessages, getPeerPhoto, getStickerSet, getWallPaper, getStoryById)
    /// per parent entity key (`message:<peer>:<id>`, …). getMessages counts each id asked for.
    public var parents: [String: Int]
    /// Successful part answers per file id (decimal string): getFile + getCdnFile + plain GETs.
    public var fileParts: [String: Int]
    /// Bytes served per file id (decimal string).
    public var fileBytes: [String: Int64]
    /// Answers per error name (`FILE_REFERENCE_EXPIRED`, `FLOOD_WAIT_1`, …).
    public var errors: [String: Int]

    public init(methods: [String: Int], parents: [String: Int], fileParts: [String: Int], fileBytes: [String: Int64], errors: [String: Int]) {
        self.methods = methods
        self.parents = parents
        self.fileParts = fileParts
        self.fileBytes = fileBytes
        self.errors = errors
    }
}

/// `GET /admin/counters/files/<id>`: part answers of one file by offset (getFile and
/// getCdnFile), to prove a resumed download fetched only the missing parts.
public struct FilePartCounters: Codable, Hashable, Sendable {
    public var fileId: Int64
    /// All part answers for the file (plain GETs included).
    public var parts: Int
    public var bytes: Int64
    /// Offset (decimal string) → answers.
    public var offsets: [String: Int]

    public init(fileId: Int64, parts: Int, bytes: Int64, offsets: [String: Int]) {
        self.fileId = fileId
        self.parts = parts
        self.bytes = bytes
        self.offsets = offsets
    }
}

/// Fault knobs, all at once (`GET /admin/faults`) or as a partial update
/// (`POST /admin/faults`: only the fields present change). Rates are 0…1 per request.
public struct FaultConfig: Codable, Hashable, Sendable {
    /// Added before every non-admin answer.
    public var latencyMs: Int?
    /// Cap per response body in bytes/second (0 = unlimited).
    public var bandwidthBytesPerSecond: Int64?
    /// Share of API and part calls answered `500 INTERNAL`.
    public var errorRate: Double?
    /// Share of API and part calls answered `420 FLOOD_WAIT_<floodWaitSeconds>`.
    public var floodWaitRate: Double?
    public var floodWaitSeconds: Int?
    /// Share of part answers (getFile, getCdnFile, plain GET) with one byte flipped;
    /// `X-Part-SHA256` still carries the hash of the correct bytes.
    public var corruptRate: Double?
    /// Share of part answers whose connection is closed after half the body.
    public var dropRate: Double?
    /// When true every revalidation call answers `500 INTERNAL`.
    public var failRevalidation: Bool?
    /// A kind of malformed answer to inject (see `MalformedAnswer`), at `malformedRate`.
    public var malformed: MalformedAnswer?
    /// Share of API calls given the `malformed` answer.
    public var malformedRate: Double?

    public init(
        latencyMs: Int? = nil, bandwidthBytesPerSecond: Int64? = nil, errorRate: Double? = nil,
        floodWaitRate: Double? = nil, floodWaitSeconds: Int? = nil, corruptRate: Double? = nil,
        dropRate: Double? = nil, failRevalidation: Bool? = nil, malformed: MalformedAnswer? = nil,
        malformedRate: Double? = nil
    ) {
        self.latencyMs = latencyMs
        self.bandwidthBytesPerSecond = bandwidthBytesPerSecond
        self.errorRate = errorRate
        self.floodWaitRate = floodWaitRate
        self.floodWaitSeconds = floodWaitSeconds
        self.corruptRate = corruptRate
        self.dropRate = dropRate
        self.failRevalidation = failRevalidation
        self.malformed = malformed
        self.malformedRate = malformedRate
    }
}

/// Deliberately wrong server answers, so clients can prove they reject them and store nothing.
public enum MalformedAnswer: String, Codable, Hashable, Sendable {
    case none
    /// 200 with `Content-Type: application/json` and a body that is not JSON (any API call).
    case badJSON
    /// 400 with an error name no client knows (`WEIRD_ERROR_42`).
    case unknownError
    /// A part body cut to half its length (not at end of file); `X-Part-SHA256` of the full part.
    case shortPart
    /// A part body longer than `limit` (4 KiB of extra bytes appended).
    case oversizePart
}

/// `POST /admin/references/expire`: with no `parent`, every reference issued so far expires;
/// with `parent` (a `ParentEntity` key), only that entity's.
public struct ExpireReferencesRequest: Codable, Hashable, Sendable {
    public var parent: String?
    public init(parent: String? = nil) { self.parent = parent }
}

/// One file as the admin listing describes it.
public struct FileInfo: Codable, Hashable, Sendable {
    public var id: Int64
    public var dcId: Int
    public var type: FileLocationType
    public var size: Int64
    /// Lowercase hex SHA-256 of the bytes `upload.getFile` serves (for secret files: the
    /// container; `plaintextSHA256` has the decrypted file's hash).
    public var sha256: String
    public var plaintextSHA256: String?
    /// Served through the CDN redirect.
    public var cdn: Bool
    /// On the CDN only after `reuploadCdnFile`.
    public var cdnNeedsReupload: Bool
    /// Parent entity keys.
    public var parents: [String]
    /// Path of the plain Range URL on every DC port: `/plain/<id>`.
    public var plainPath: String
    /// The location to use with `upload.getFile` (reference from a parent).
    public var location: FileLocation

    public init(
        id: Int64, dcId: Int, type: FileLocationType, size: Int64, sha256: String, plaintextSHA256: String?,
        cdn: Bool, cdnNeedsReupload: Bool, parents: [String], plainPath: String, location: FileLocation
    ) {
        self.id = id
        self.dcId = dcId
        self.type = type
        self.size = size
        self.sha256 = sha256
        self.plaintextSHA256 = plaintextSHA256
        self.cdn = cdn
        self.cdnNeedsReupload = cdnNeedsReupload
        self.parents = parents
        self.plainPath = plainPath
        self.location = location
    }
}

/// `GET /admin/dataset`: what exists. File hashes are not computed here (see `/admin/files/<id>`).
public struct DatasetListing: Codable, Hashable, Sendable {
    public var peers: [Peer]
    /// Message count per peer id (decimal string).
    public var messageCounts: [String: Int]
    public var stickerSetIds: [Int64]
    public var wallpaperIds: [Int64]
    /// `"<peerId>:<storyId>"` per story.
    public var stories: [String]
    /// The peer holding the benchmark files (`bulkFiles`, `bigFiles`), one document per message.
    public var benchPeerId: Int64?
    /// The message with `bundleSize` media items, if configured.
    public var bundleMessage: String?
    /// Every file id with size and DC, without hashes.
    public var files: [FileSummary]

    public init(
        peers: [Peer], messageCounts: [String: Int], stickerSetIds: [Int64], wallpaperIds: [Int64],
        stories: [String], benchPeerId: Int64?, bundleMessage: String?, files: [FileSummary]
    ) {
        self.peers = peers
        self.messageCounts = messageCounts
        self.stickerSetIds = stickerSetIds
        self.wallpaperIds = wallpaperIds
        self.stories = stories
        self.benchPeerId = benchPeerId
        self.bundleMessage = bundleMessage
        self.files = files
    }
}

/// A file in the dataset listing.
public struct FileSummary: Codable, Hashable, Sendable {
    public var id: Int64
    public var dcId: Int
    public var type: FileLocationType
    public var size: Int64
    public var cdn: Bool
    /// First parent entity key.
    public var parent: String?

    public init(id: Int64, dcId: Int, type: FileLocationType, size: Int64, cdn: Bool, parent: String?) {
        self.id = id
        self.dcId = dcId
        self.type = type
        self.size = size
        self.cdn = cdn
        self.parent = parent
    }
}

/// `POST /admin/messages/add`: append `count` new messages (newest, ids continue) to a peer.
public struct AddMessagesRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public var count: Int
    /// Give each new message one generated media item.
    public var withMedia: Bool?

    public init(peerId: Int64, count: Int, withMedia: Bool? = nil) {
        self.peerId = peerId
        self.count = count
        self.withMedia = withMedia
    }
}

/// `POST /admin/messages/delete`: remove messages; later fetches leave them out.
public struct DeleteMessagesRequest: Codable, Hashable, Sendable {
    public var peerId: Int64
    public var ids: [Int32]

    public init(peerId: Int64, ids: [Int32]) {
        self.peerId = peerId
        self.ids = ids
    }
}

/// `GET /admin/uploads/<fileId>`: what the server holds of an upload in progress.
public struct UploadInfo: Codable, Hashable, Sendable {
    public var fileId: Int64
    /// How many times each part number was received (decimal string keys).
    public var partReceipts: [String: Int]
    /// Parts currently stored.
    public var storedParts: Int
    public var totalParts: Int?
    public var bytes: Int64
    /// `true` once forgotten with `POST /admin/uploads/forget`.
    public var forgotten: Bool

    public init(fileId: Int64, partReceipts: [String: Int], storedParts: Int, totalParts: Int?, bytes: Int64, forgotten: Bool) {
        self.fileId = fileId
        self.partReceipts = partReceipts
        self.storedParts = storedParts
        self.totalParts = totalParts
        self.bytes = bytes
        self.forgotten = forgotten
    }
}

/// `POST /admin/uploads/forget`: drop the stored parts of an upload.
public struct ForgetUploadRequest: Codable, Hashable, Sendable {
    public var fileId: Int64
    public init(fileId: Int64) { self.fileId = fileId }
}

/// Answer of `PUT /plain/upload/<name>` and `GET /admin/plain-uploads/<name>`.
public struct PlainUploadInfo: Codable, Hashable, Sendable {
    public var name: String
    public var size: Int64
    public var sha256: String

    public init(name: String, size: Int64, sha256: String) {
        self.name = name
        self.size = size
        self.sha256 = sha256
    }
}

/// `POST /admin/files/<id>/revise-header`: a streamable video's header was given new bytes
/// (same size); `sha256` is the whole file's new hash.
public struct HeaderRevision: Codable, Hashable, Sendable {
    public var fileId: Int64
    public var headerSize: Int64
    public var revision: Int
    public var sha256: String

    public init(fileId: Int64, headerSize: Int64, revision: Int, sha256: String) {
        self.fileId = fileId
        self.headerSize = headerSize
        self.revision = revision
        self.sha256 = sha256
    }
}
