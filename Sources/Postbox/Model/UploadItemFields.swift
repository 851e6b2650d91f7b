import Foundation

/// A value that never prints: its description, debug description and mirror say only that it is
/// redacted, so no log line, error, `dump` or test failure that shows it (or an item holding it)
/// shows what it holds.
public protocol RedactedWhenPrinted: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {}

extension RedactedWhenPrinted {
    public var description: String { "\(Self.self)(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// The key material of a secret chat's file: the AES-256 key, the 32-byte IGE IV and the random
/// padding that fills the last block.
public struct SecretKeyMaterial: Sendable, Equatable, RedactedWhenPrinted {
    public let key: Data
    public let iv: Data
    public let padding: Data

    public init(key: Data, iv: Data, padding: Data) {
        self.key = key
        self.iv = iv
        self.padding = padding
    }
}

/// An enqueued file's bytes in an S3 bucket: the object's key and the bucket's name (for
/// messages). Neither shows the file's name or path.
public struct S3StagedObject: Sendable, Equatable {
    public var key: String
    public var bucket: String

    public init(key: String, bucket: String) {
        self.key = key
        self.bucket = bucket
    }
}

/// Where an item's bytes were put at enqueue.
public enum UploadStagingLocation: Sendable, Equatable {
    /// Hard-linked into the account's uploads directory.
    case link
    /// A private copy there (for a secret file, its encrypted container).
    case copy
    /// An object in a bucket; nil once the item was sent and the object removed.
    case bucket(S3StagedObject?)

    /// The word stored and shown (`link`, `copy`, `bucket`).
    public var word: String {
        switch self {
        case .link: return "link"
        case .copy: return "copy"
        case .bucket: return "bucket"
        }
    }

    /// The location once the stored bytes were removed (a bucket's object is gone).
    public var released: UploadStagingLocation {
        if case .bucket = self { return .bucket(nil) }
        return self
    }

    /// The bucket's object while it holds the bytes.
    public var bucketObject: S3StagedObject? {
        if case .bucket(let object) = self { return object }
        return nil
    }
}

/// A secret item's key material as rows of an earlier build hold it: hex text of the key, the IV
/// and the padding.
public struct LegacySecretKeyText: Sendable, Equatable, RedactedWhenPrinted {
    public let key: String
    public let iv: String
    public let padding: String

    public init(key: String, iv: String, padding: String) {
        self.key = key
        self.iv = iv
        self.padding = padding
    }
}

/// How an `UploadItem`'s typed fields other than its key material are stored: as entries of
/// its string map under the names rows have always used, so a row written before the fields
/// were typed reads the same, and an earlier build reads a new row. Entries no field reads
/// (an earlier build's key fingerprint and container size, derived from the key) are dropped.
struct UploadItemStringFields {
    static let staging = "staging"
    static let s3Key = "staging.s3Key"
    static let s3Bucket = "staging.s3Bucket"
    static let legacyKey = "secret.key"
    static let legacyIV = "secret.iv"
    static let legacyPadding = "secret.padding"
    static let decryptedSize = "secret.decryptedSize"
    static let stagedContainer = "secret.stagedContainer"
    static let containerSHA256 = "secret.containerSHA256"
    static let mtime = "stat.mtimeNs"
    static let inode = "stat.inode"
    static let ctime = "stat.ctimeNs"
    static let mimeType = "mimeType"
    static let documentId = "documentId"
    static let interruptions = "interruptions"

    var staging: UploadStagingLocation?
    var legacySecretKey: LegacySecretKeyText?
    var secretDecryptedSize: Int64?
    var stagedContainerSHA256: String?
    var stagedMtimeNs: Int64?
    var stagedInode: UInt64?
    var stagedChangeTimeNs: Int64?
    var mimeType: String?
    var documentId: Int64?
    var interruptions: Int

    /// The fields stored in `map`.
    init(_ map: [String: String]) {
        switch map[Self.staging] {
        case "link"?: staging = .link
        case "copy"?: staging = .copy
        case "bucket"?: staging = .bucket(map[Self.s3Key].map { S3StagedObject(key: $0, bucket: map[Self.s3Bucket] ?? "") })
        default: staging = nil
        }
        if let key = map[Self.legacyKey] {
            legacySecretKey = LegacySecretKeyText(key: key, iv: map[Self.legacyIV] ?? "", padding: map[Self.legacyPadding] ?? "")
        }
        secretDecryptedSize = map[Self.decryptedSize].flatMap { Int64($0) }
        stagedContainerSHA256 = map[Self.stagedContainer] == "1" ? map[Self.containerSHA256] ?? "" : nil
        stagedMtimeNs = map[Self.mtime].flatMap { Int64($0) }
        stagedInode = map[Self.inode].flatMap { UInt64($0) }
        stagedChangeTimeNs = map[Self.ctime].flatMap { Int64($0) }
        mimeType = map[Self.mimeType]
        documentId = map[Self.documentId].flatMap { Int64($0) }
        interruptions = map[Self.interruptions].flatMap { Int($0) } ?? 0
    }

    /// `item`'s fields as map entries.
    static func entries(of item: UploadItem) -> [String: String] {
        var map: [String: String] = [:]
        if let location = item.staging {
            map[staging] = location.word
            if let object = location.bucketObject {
                map[s3Key] = object.key
                map[s3Bucket] = object.bucket
            }
        }
        if let legacy = item.legacySecretKey {
            map[legacyKey] = legacy.key
            map[legacyIV] = legacy.iv
            map[legacyPadding] = legacy.padding
        }
        map[decryptedSize] = item.secretDecryptedSize.map { String($0) }
        if let sha = item.stagedContainerSHA256 {
            map[stagedContainer] = "1"
            map[containerSHA256] = sha
        }
        map[mtime] = item.stagedMtimeNs.map { String($0) }
        map[inode] = item.stagedInode.map { String($0) }
        map[ctime] = item.stagedChangeTimeNs.map { String($0) }
        map[mimeType] = item.mimeType
        map[documentId] = item.documentId.map { String($0) }
        if item.interruptions != 0 { map[interruptions] = String(item.interruptions) }
        return map
    }
}
