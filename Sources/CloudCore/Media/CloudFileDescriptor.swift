import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// Everything the fetcher needs to download one stored file: its MediaBox resource id, where it
/// lives (location with DC), its size and content type, and the file reference with the time it
/// was obtained (to judge expiry). Stored inside the Postbox media types of this folder.
///
/// The file reference is a secret: descriptions and mirrors show only its length.
public struct CloudFileDescriptor: PostboxCoding, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The MediaBox resource id (same as the `CloudFetchableResource` built for this file).
    public var resourceId: String
    public var location: FileLocation
    /// Bytes of the stored file (for secret files: the decrypted size).
    public var size: Int64
    public var contentType: MediaContentType
    public var mimeType: String?
    /// The parent's reference when obtained; empty for secret files (they need none).
    public var fileReference: FileReference
    /// Unix seconds when `fileReference` was obtained.
    public var referenceObtainedAt: Int64

    public init(
        resourceId: String, location: FileLocation, size: Int64, contentType: MediaContentType, mimeType: String? = nil,
        fileReference: FileReference, referenceObtainedAt: Int64
    ) {
        self.resourceId = resourceId
        self.location = location
        self.size = size
        self.contentType = contentType
        self.mimeType = mimeType
        self.fileReference = fileReference
        self.referenceObtainedAt = referenceObtainedAt
    }

    public static var postboxTypeName: String { "CloudFileDescriptor" }

    public init(decoder d: PostboxDecoder) throws {
        resourceId = d.decodeString(forKey: "r") ?? ""
        location = try CloudFileDescriptor.decodeLocation(d)
        size = d.decodeInt64(forKey: "s") ?? 0
        contentType = MediaContentType(rawValue: UInt8(clamping: d.decodeInt32(forKey: "ct") ?? 6)) ?? .other
        mimeType = d.decodeString(forKey: "mt")
        fileReference = FileReference(d.decodeBytes(forKey: "fr") ?? Data())
        referenceObtainedAt = d.decodeInt64(forKey: "fo") ?? 0
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(resourceId, forKey: "r")
        CloudFileDescriptor.encodeLocation(location, e)
        e.encode(size, forKey: "s")
        e.encode(Int32(contentType.rawValue), forKey: "ct")
        e.encodeIfPresent(mimeType, forKey: "mt")
        e.encode(fileReference.bytes, forKey: "fr")
        e.encode(referenceObtainedAt, forKey: "fo")
    }

    /// A `FileLocation` as flat fields (`lt` type, `li` id, `lh` access hash, `ld` DC, `ls`
    /// thumb size, `lp` peer).
    static func encodeLocation(_ l: FileLocation, _ e: PostboxEncoder) {
        e.encode(l.type.rawValue, forKey: "lt")
        e.encode(l.id, forKey: "li")
        e.encode(l.accessHash, forKey: "lh")
        e.encode(Int32(clamping: l.dcId), forKey: "ld")
        e.encodeIfPresent(l.thumbSize, forKey: "ls")
        e.encodeIfPresent(l.peerId, forKey: "lp")
    }

    static func decodeLocation(_ d: PostboxDecoder) throws -> FileLocation {
        guard let raw = d.decodeString(forKey: "lt"), let type = FileLocationType(rawValue: raw), let id = d.decodeInt64(forKey: "li") else {
            throw PostboxError.decoding("cloud file without a location")
        }
        return FileLocation(
            type: type, id: id, accessHash: d.decodeInt64(forKey: "lh") ?? 0, dcId: Int(d.decodeInt32(forKey: "ld") ?? 1),
            thumbSize: d.decodeString(forKey: "ls"), peerId: d.decodeInt64(forKey: "lp"))
    }

    public var description: String {
        "CloudFileDescriptor(\(resourceId), \(location.stableKey), \(size) bytes, \(contentType), reference: \(fileReference.bytes.count) bytes)"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "resourceId": resourceId, "location": location.stableKey, "size": size,
                "contentType": contentType, "fileReference": "[redacted \(fileReference.bytes.count) bytes]",
                "referenceObtainedAt": referenceObtainedAt,
            ], displayStyle: .struct)
    }
}
