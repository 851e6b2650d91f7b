import Foundation
import Postbox

/// An upload-queue row as a build before the item's fields were typed wrote it: the fields of
/// the first release under their own names, everything added later (staging location, MIME
/// type, modification time, document id, interruptions, secret sizes and key) only as entries
/// of the row's string map. Written out field by field here, not through `UploadItem`, so a
/// test of reading it does not depend on the code it tests.
public struct EarlierUploadRow: PostboxCoding {
    /// Stored as an upload item.
    public static var postboxTypeName: String { UploadItem.postboxTypeName }

    public var item: UploadItem
    public var strings: [String: String]

    /// `item`'s first-release fields (its typed ones are ignored) with `strings` as the map.
    public init(_ item: UploadItem, strings: [String: String]) {
        self.item = item
        self.strings = strings
    }

    public init(decoder: PostboxDecoder) throws {
        item = try UploadItem(decoder: decoder)
        strings = decoder.decodeStringDictionary(keysKey: "xk", valuesKey: "xv")
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(item.id, forKey: "id")
        e.encode(item.peerId.rawValue, forKey: "peer")
        e.encode(item.stagedPath, forKey: "path")
        e.encode(item.originalName, forKey: "name")
        e.encode(item.size, forKey: "size")
        e.encode(item.sha256, forKey: "sha")
        e.encode(item.caption, forKey: "cap")
        e.encode(item.isSecret, forKey: "sec")
        e.encode(item.state.rawValue, forKey: "st")
        e.encode(item.fileId, forKey: "fid")
        e.encode(item.partSize, forKey: "ps")
        e.encode(item.totalParts, forKey: "tp")
        e.encode(item.randomId, forKey: "rid")
        e.encodeIfPresent(item.messageId, forKey: "mid")
        e.encodeIfPresent(item.failureReason, forKey: "why")
        e.encode(item.attempts, forKey: "att")
        e.encode(item.notBefore, forKey: "nb")
        e.encode(item.leaseHolder, forKey: "lh")
        e.encode(item.leaseUntil, forKey: "lu")
        e.encode(item.enqueuedAt, forKey: "at")
        e.encode(strings, keysKey: "xk", valuesKey: "xv")
    }

    /// The row's bytes.
    public var bytes: Data { PostboxEncoder.encode(self) }

    /// The row read as this build reads it.
    public func decoded() throws -> UploadItem { try PostboxDecoder.decode(UploadItem.self, from: bytes) }
}
