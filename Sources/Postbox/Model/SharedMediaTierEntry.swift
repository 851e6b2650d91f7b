import Foundation

/// One object of the shared media tier: a complete, verified resource that some host of the
/// cluster published to the bucket, so that the others read it from there instead of the cloud.
public struct SharedMediaTierEntry: PostboxCoding, Sendable, Equatable {
    /// The resource's MediaBox id (ids carry no file reference, access hash or key).
    public var resourceId: String
    /// The object's key in the bucket (a digest of the resource id under the tier's prefix).
    public var objectKey: String
    public var size: Int64
    /// Lower-case hex SHA-256 of the object's bytes, computed by the publishing host.
    public var sha256: String
    /// The host that published it.
    public var writerHost: String
    /// Unix seconds of the publish.
    public var createdAt: Int64
    /// Unix seconds of the last publish or read from the tier (cleanup's LRU order).
    public var lastUsedAt: Int64

    public init(resourceId: String, objectKey: String, size: Int64, sha256: String, writerHost: String, createdAt: Int64, lastUsedAt: Int64) {
        self.resourceId = resourceId
        self.objectKey = objectKey
        self.size = size
        self.sha256 = sha256
        self.writerHost = writerHost
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }

    public init(decoder d: PostboxDecoder) throws {
        resourceId = d.decodeString(forKey: "r") ?? ""
        objectKey = d.decodeString(forKey: "k") ?? ""
        size = d.decodeInt64(forKey: "s") ?? 0
        sha256 = d.decodeString(forKey: "h") ?? ""
        writerHost = d.decodeString(forKey: "w") ?? ""
        createdAt = d.decodeInt64(forKey: "c") ?? 0
        lastUsedAt = d.decodeInt64(forKey: "u") ?? 0
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(resourceId, forKey: "r")
        e.encode(objectKey, forKey: "k")
        e.encode(size, forKey: "s")
        e.encode(sha256, forKey: "h")
        e.encode(writerHost, forKey: "w")
        e.encode(createdAt, forKey: "c")
        e.encode(lastUsedAt, forKey: "u")
    }
}
