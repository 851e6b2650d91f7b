import Foundation

/// The key material of a secret chat's file: the AES-256 key, the 32-byte IGE IV and the random
/// padding that fills the last block. It never prints: its description, debug description and
/// mirror say only that it is redacted, so no log line, error, `dump` or test failure that shows
/// an item shows the key.
public struct SecretKeyMaterial: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let key: Data
    public let iv: Data
    public let padding: Data

    public init(key: Data, iv: Data, padding: Data) {
        self.key = key
        self.iv = iv
        self.padding = padding
    }

    public var description: String { "SecretKeyMaterial(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
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

/// How an `UploadItem`'s staging location is stored: as entries of its string map under the
/// names rows have always used, so rows written before the location was typed read the same,
/// and an older build reads new rows.
enum UploadStagingFieldKeys {
    static let staging = "staging"
    static let s3Key = "staging.s3Key"
    static let s3Bucket = "staging.s3Bucket"

    /// Moves the location out of `extra`.
    static func take(from extra: inout [String: String]) -> UploadStagingLocation? {
        let location: UploadStagingLocation?
        switch extra[staging] {
        case "link"?: location = .link
        case "copy"?: location = .copy
        case "bucket"?: location = .bucket(extra[s3Key].map { S3StagedObject(key: $0, bucket: extra[s3Bucket] ?? "") })
        default: location = nil
        }
        if location != nil { for name in [staging, s3Key, s3Bucket] { extra[name] = nil } }
        return location
    }

    /// `extra` with the location put back under its names.
    static func put(_ location: UploadStagingLocation?, into extra: [String: String]) -> [String: String] {
        guard let location else { return extra }
        var all = extra
        all[staging] = location.word
        if let object = location.bucketObject {
            all[s3Key] = object.key
            all[s3Bucket] = object.bucket
        }
        return all
    }
}
