/// A Telegram-style error name as carried on the wire (`FILE_MIGRATE_2`, `FLOOD_WAIT_5`, …).
///
/// Names with a numeric suffix parse into cases with the number, so clients can switch on them.
/// Unknown names survive as `.other(String)` so a newer server never breaks an older client.
public enum CloudErrorName: Hashable, Sendable, CustomStringConvertible {
    /// The file lives on another datacenter; retry there (HTTP 303).
    case fileMigrate(Int)
    /// Too many requests; wait this many seconds (HTTP 420).
    case floodWait(Int)
    /// Upload part `n` was never received (HTTP 400) — at `messages.sendMedia`.
    case filePartMissing(Int)
    /// The file reference is expired or does not belong to the file; re-fetch the parent entity.
    case fileReferenceExpired
    /// `limit` breaks the part rules (see `FilePartRules`).
    case limitInvalid
    /// `offset` breaks the part rules, or is negative.
    case offsetInvalid
    /// The CDN does not hold the file yet; call `upload.reuploadCdnFile` on the master DC.
    case fileReuploadNeeded
    /// The CDN file token is unknown or malformed.
    case fileTokenInvalid
    /// A message id is invalid (e.g. zero or negative), or more than 100 ids were asked for.
    case messageIdInvalid
    /// The peer does not exist.
    case peerIdInvalid
    /// The upload parts do not form a file (wrong count, sizes differ, too many parts).
    case filePartsInvalid
    /// An upload part has a forbidden size.
    case filePartSizeInvalid
    /// The upload `fileId` is invalid (zero) or was forgotten by the server.
    case fileIdInvalid
    /// The file location names no file, or its access hash or type does not match.
    case locationInvalid
    /// The sticker set does not exist.
    case stickerSetInvalid
    /// The wallpaper does not exist.
    case wallpaperInvalid
    /// The story does not exist.
    case storyIdInvalid
    /// The checksum given at `messages.sendMedia` does not match the uploaded bytes.
    case checksumInvalid
    /// The JSON body or a query parameter could not be read.
    case badRequest
    /// No such method (HTTP 404).
    case methodInvalid
    /// Server-side failure (HTTP 500). Retry with backoff.
    case internalError
    /// Any name this version does not know.
    case other(String)

    /// Parses a wire name; numeric suffixes of `FILE_MIGRATE_`, `FLOOD_WAIT_`, `FILE_PART_<n>_MISSING` are decoded.
    public init(parsing raw: String) {
        if let n = CloudErrorName.suffix(raw, prefix: "FILE_MIGRATE_") { self = .fileMigrate(n); return }
        if let n = CloudErrorName.suffix(raw, prefix: "FLOOD_WAIT_") { self = .floodWait(n); return }
        if raw.hasPrefix("FILE_PART_"), raw.hasSuffix("_MISSING") {
            let mid = raw.dropFirst("FILE_PART_".count).dropLast("_MISSING".count)
            if let n = Int(mid), n >= 0 { self = .filePartMissing(n); return }
        }
        self = Self.byName[raw] ?? .other(raw)
    }

    /// The names without a number, by wire name: `rawValue` is the one spelling of each.
    private static let byName = Dictionary(
        uniqueKeysWithValues: [
            fileReferenceExpired, limitInvalid, offsetInvalid, fileReuploadNeeded, fileTokenInvalid, messageIdInvalid, peerIdInvalid,
            filePartsInvalid, filePartSizeInvalid, fileIdInvalid, locationInvalid, stickerSetInvalid, wallpaperInvalid, storyIdInvalid,
            checksumInvalid, badRequest, methodInvalid, internalError,
        ].map { ($0.rawValue, $0) })

    private static func suffix(_ raw: String, prefix: String) -> Int? {
        guard raw.hasPrefix(prefix) else { return nil }
        let rest = raw.dropFirst(prefix.count)
        guard !rest.isEmpty, rest.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(rest) else { return nil }
        return n
    }

    /// The name as written on the wire.
    public var rawValue: String {
        switch self {
        case .fileMigrate(let n): return "FILE_MIGRATE_\(n)"
        case .floodWait(let n): return "FLOOD_WAIT_\(n)"
        case .filePartMissing(let n): return "FILE_PART_\(n)_MISSING"
        case .fileReferenceExpired: return "FILE_REFERENCE_EXPIRED"
        case .limitInvalid: return "LIMIT_INVALID"
        case .offsetInvalid: return "OFFSET_INVALID"
        case .fileReuploadNeeded: return "FILE_REUPLOAD_NEEDED"
        case .fileTokenInvalid: return "FILE_TOKEN_INVALID"
        case .messageIdInvalid: return "MESSAGE_ID_INVALID"
        case .peerIdInvalid: return "PEER_ID_INVALID"
        case .filePartsInvalid: return "FILE_PARTS_INVALID"
        case .filePartSizeInvalid: return "FILE_PART_SIZE_INVALID"
        case .fileIdInvalid: return "FILE_ID_INVALID"
        case .locationInvalid: return "LOCATION_INVALID"
        case .stickerSetInvalid: return "STICKERSET_INVALID"
        case .wallpaperInvalid: return "WALLPAPER_INVALID"
        case .storyIdInvalid: return "STORY_ID_INVALID"
        case .checksumInvalid: return "CHECKSUM_INVALID"
        case .badRequest: return "BAD_REQUEST"
        case .methodInvalid: return "METHOD_INVALID"
        case .internalError: return "INTERNAL"
        case .other(let s): return s
        }
    }

    public var description: String { rawValue }

    /// The HTTP status the server answers with for this name.
    public var httpStatus: Int {
        switch self {
        case .fileMigrate: return 303
        case .floodWait: return 420
        case .methodInvalid: return 404
        case .internalError: return 500
        default: return 400
        }
    }
}

extension CloudErrorName: Codable {
    public init(from decoder: Decoder) throws {
        self.init(parsing: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}
