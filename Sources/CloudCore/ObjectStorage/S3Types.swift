import Foundation

/// What HEAD (or a GET) says about an object.
public struct S3ObjectInfo: Sendable, Equatable {
    public var key: String
    public var size: Int64
    /// Opaque to jobrun (not a checksum it relies on).
    public var eTag: String
    /// `x-amz-meta-*` values, names without the prefix, lower-cased.
    public var metadata: [String: String]
    /// The SHA-256 checksum the service keeps with the object (`x-amz-checksum-sha256`, base64),
    /// when it was stored with one: of the bytes for a single PUT; for a multipart upload, of
    /// the parts' digests in order (S3 appends `-<parts>`).
    public var sha256Checksum: String?
}

/// One entry of a listing.
public struct S3ListedObject: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var eTag: String
    /// As the service wrote it (ISO 8601).
    public var lastModified: String
}

/// One page of ListObjectsV2.
public struct S3ObjectPage: Sendable {
    public var objects: [S3ListedObject]
    /// Pass to the next call; `nil` on the last page.
    public var nextContinuationToken: String?
}

/// A part the service holds for a multipart upload (ListParts).
public struct S3UploadedPart: Sendable, Equatable {
    public var partNumber: Int
    public var size: Int64
    public var eTag: String
}

/// A part to name in CompleteMultipartUpload.
public struct S3CompletedPart: Sendable, Equatable {
    public var partNumber: Int
    public var eTag: String
    /// The part's SHA-256, for an upload created with SHA-256 checksums (the service then
    /// requires it of every part).
    public var sha256: Data?
    public init(partNumber: Int, eTag: String, sha256: Data? = nil) {
        self.partNumber = partNumber
        self.eTag = eTag
        self.sha256 = sha256
    }
}

/// A multipart upload in progress (ListMultipartUploads).
public struct S3PendingUpload: Sendable, Equatable {
    public var key: String
    public var uploadId: String
    /// As the service wrote it (ISO 8601).
    public var initiated: String
}
