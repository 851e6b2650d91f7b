import Foundation

/// What Postbox knows about the file reference of one resource: which entity holds it, the
/// opaque reference (a secret: never log it), when it was obtained, and whether the parent
/// still holds the file.
public struct MediaReferenceRecord: PostboxCoding, Sendable, Equatable {
    public enum Status: Int32, Sendable {
        case valid = 0
        /// The parent no longer holds the file (message deleted): do not retry.
        case gone = 1
        /// The last revalidation failed; retried later with backoff.
        case failed = 2
    }

    public var resourceId: String
    public var parent: MediaParent
    public var fileReference: Data
    /// Unix seconds when the reference was obtained (drives "expires within" scans).
    public var obtainedAt: Int64
    public var status: Status
    /// Failed revalidations in a row (for backoff).
    public var failures: Int32
    /// The media the file belongs to, when the parent is a message: other stored messages with
    /// the same media use the same file, and inherit the record when its parent is trimmed.
    /// Nil in records written before it was kept, and for other parents.
    public var media: MediaId?

    public init(
        resourceId: String, parent: MediaParent, fileReference: Data, obtainedAt: Int64, status: Status = .valid, failures: Int32 = 0,
        media: MediaId? = nil
    ) {
        self.resourceId = resourceId
        self.parent = parent
        self.fileReference = fileReference
        self.obtainedAt = obtainedAt
        self.status = status
        self.failures = failures
        self.media = media
    }

    public init(decoder: PostboxDecoder) throws {
        resourceId = decoder.decodeString(forKey: "r") ?? ""
        guard let parentKey = decoder.decodeBytes(forKey: "p"), let parent = MediaParent(key: ValueBoxKey(parentKey)) else {
            throw PostboxError.decoding("media reference without a parent")
        }
        self.parent = parent
        fileReference = decoder.decodeBytes(forKey: "f") ?? Data()
        obtainedAt = decoder.decodeInt64(forKey: "o") ?? 0
        status = Status(rawValue: decoder.decodeInt32(forKey: "s") ?? 0) ?? .valid
        failures = decoder.decodeInt32(forKey: "e") ?? 0
        if let namespace = decoder.decodeInt32(forKey: "mn"), let id = decoder.decodeInt64(forKey: "mi") {
            media = MediaId(namespace: namespace, id: id)
        }
    }

    /// When the reference was obtained, whether its parent is the one whose key is `parentKey`,
    /// and its media, read from a stored record lent for the call without decoding the rest (the
    /// record is still validated whole, and a parent that does not parse is refused as
    /// `init(decoder:)` refuses it).
    static func obtainedAt(
        _ buffer: UnsafeRawBufferPointer, isHeldBy parentKey: ArraySlice<UInt8>
    ) throws -> (obtainedAt: Int64, sameParent: Bool, media: MediaId?) {
        let (base, length) = try PostboxDecoder.rootHeader(buffer, expecting: postboxTypeHash, Self.self)
        let decoder = PostboxDecoder()
        decoder.reset(borrowing: base, start: 8, end: 8 + length)
        let same = decoder.withBytes(forKey: "p") { $0.elementsEqual(parentKey) }
        if same != true, decoder.withBytes(forKey: "p", { MediaParent(key: ValueBoxKey(bytes: [UInt8]($0))) }) == nil {
            try decoder.finishRow()
            throw PostboxError.decoding("media reference without a parent")
        }
        let obtainedAt = decoder.decodeInt64(forKey: "o") ?? 0
        var media: MediaId?
        if let namespace = decoder.decodeInt32(forKey: "mn"), let id = decoder.decodeInt64(forKey: "mi") {
            media = MediaId(namespace: namespace, id: id)
        }
        try decoder.finishRow()
        return (obtainedAt, same == true, media)
    }

    public func encode(_ encoder: PostboxEncoder) {
        encoder.encode(resourceId, forKey: "r")
        encoder.encode(Data(parent.key.bytes), forKey: "p")
        encoder.encode(fileReference, forKey: "f")
        encoder.encode(obtainedAt, forKey: "o")
        encoder.encode(status.rawValue, forKey: "s")
        encoder.encode(failures, forKey: "e")
        if let media {
            encoder.encode(media.namespace, forKey: "mn")
            encoder.encode(media.id, forKey: "mi")
        }
    }
}
