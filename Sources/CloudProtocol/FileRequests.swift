import Foundation

/// `POST /api/upload.getFile` body. Answer: raw part bytes (`X-Cloud-Result: part`,
/// `Content-Type: application/octet-stream`), or a JSON `GetFileRedirect`
/// (`X-Cloud-Result: cdnRedirect`, `Content-Type: application/json`), or an error.
public struct GetFileRequest: Codable, Hashable, Sendable {
    public var location: FileLocation
    /// The parent entity's current reference; ignored (may be empty) for `secret` locations.
    public var fileReference: Data
    public var offset: Int64
    public var limit: Int64

    public init(location: FileLocation, fileReference: Data, offset: Int64, limit: Int64) {
        self.location = location
        self.fileReference = fileReference
        self.offset = offset
        self.limit = limit
    }

    /// `fileReference` may be omitted (empty) — only valid for `secret` locations.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        location = try c.decode(FileLocation.self, forKey: .location)
        fileReference = try c.decodeIfPresent(Data.self, forKey: .fileReference) ?? Data()
        offset = try c.decode(Int64.self, forKey: .offset)
        limit = try c.decode(Int64.self, forKey: .limit)
    }
}

/// SHA-256 of one 128 KiB block of the file's plaintext (the last block may be shorter).
public struct CdnFileHash: Codable, Hashable, Sendable {
    public var offset: Int64
    public var limit: Int64
    public var hash: Data

    public init(offset: Int64, limit: Int64, hash: Data) {
        self.offset = offset
        self.limit = limit
        self.hash = hash
    }
}

/// The JSON answer of `upload.getFile` for a file served from the CDN.
public struct GetFileRedirect: Codable, Hashable, Sendable {
    public var cdnRedirect: CdnRedirect
    public init(cdnRedirect: CdnRedirect) { self.cdnRedirect = cdnRedirect }
}

/// Where and how to fetch a file from the CDN. Parts from `upload.getCdnFile` are
/// AES-256-CTR encrypted with `encryptionKey`; the counter block for byte offset `o` is
/// `encryptionIv + o/16` (128-bit big-endian addition), i.e. one continuous CTR stream over
/// the file, so any 16-byte-aligned part decrypts on its own.
public struct CdnRedirect: Codable, Hashable, Sendable {
    /// The CDN's DC id (see `help.getConfig`).
    public var cdnDcId: Int
    /// The CDN base URL, for convenience (same as in `help.getConfig`).
    public var cdnURL: String
    /// The DC that owns the file and answers `getCdnFileHashes` / `reuploadCdnFile`.
    public var masterDcId: Int
    public var fileToken: Data
    /// 32 bytes.
    public var encryptionKey: Data
    /// 16 bytes.
    public var encryptionIv: Data
    /// Plaintext size of the file.
    public var size: Int64
    /// Hashes of the first blocks (up to `CdnHashWindow.blocks` of them, from offset 0).
    public var fileHashes: [CdnFileHash]

    public init(cdnDcId: Int, cdnURL: String, masterDcId: Int, fileToken: Data, encryptionKey: Data, encryptionIv: Data, size: Int64, fileHashes: [CdnFileHash])
    {
        self.cdnDcId = cdnDcId
        self.cdnURL = cdnURL
        self.masterDcId = masterDcId
        self.fileToken = fileToken
        self.encryptionKey = encryptionKey
        self.encryptionIv = encryptionIv
        self.size = size
        self.fileHashes = fileHashes
    }
}

/// How many 128 KiB hash blocks one `getCdnFileHashes` answer (and a redirect) carries: 64 (8 MiB).
public enum CdnHashWindow {
    public static let blocks = 64
}

/// `POST /api/upload.getCdnFile` body, sent to the CDN. Answer: raw encrypted bytes, or
/// `FILE_REUPLOAD_NEEDED`, `FILE_TOKEN_INVALID`, part-rule errors.
public struct GetCdnFileRequest: Codable, Hashable, Sendable {
    public var fileToken: Data
    public var offset: Int64
    public var limit: Int64

    public init(fileToken: Data, offset: Int64, limit: Int64) {
        self.fileToken = fileToken
        self.offset = offset
        self.limit = limit
    }
}

/// `POST /api/upload.getCdnFileHashes` body, sent to the master DC.
/// Answer `CdnFileHashesResponse`: hashes of up to 64 blocks starting at the block containing `offset`.
public struct GetCdnFileHashesRequest: Codable, Hashable, Sendable {
    public var fileToken: Data
    public var offset: Int64

    public init(fileToken: Data, offset: Int64) {
        self.fileToken = fileToken
        self.offset = offset
    }
}

/// `POST /api/upload.reuploadCdnFile` body, sent to the master DC after `FILE_REUPLOAD_NEEDED`.
/// Answer `CdnFileHashesResponse` (hashes from offset 0); afterwards the CDN serves the file.
public struct ReuploadCdnFileRequest: Codable, Hashable, Sendable {
    public var fileToken: Data
    public init(fileToken: Data) { self.fileToken = fileToken }
}

/// Answer of `getCdnFileHashes` and `reuploadCdnFile`.
public struct CdnFileHashesResponse: Codable, Hashable, Sendable {
    public var hashes: [CdnFileHash]
    public init(hashes: [CdnFileHash]) { self.hashes = hashes }
}
