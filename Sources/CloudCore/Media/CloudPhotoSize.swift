import CloudProtocol
import Foundation
import Postbox

/// One size variant of a photo or avatar (`s m x y w`, avatars `a`/`c`) and its file.
public struct CloudPhotoSize: PostboxCoding, Sendable, Equatable {
    public var type: String
    public var width: Int32
    public var height: Int32
    public var file: CloudFileDescriptor

    public init(type: String, width: Int32, height: Int32, file: CloudFileDescriptor) {
        self.type = type
        self.width = width
        self.height = height
        self.file = file
    }

    public static var postboxTypeName: String { "CloudPhotoSize" }

    public init(decoder d: PostboxDecoder) throws {
        type = d.decodeString(forKey: "t") ?? ""
        width = d.decodeInt32(forKey: "w") ?? 0
        height = d.decodeInt32(forKey: "h") ?? 0
        guard let file = try d.decodeObject(CloudFileDescriptor.self, forKey: "f") else {
            throw PostboxError.decoding("photo size without a file")
        }
        self.file = file
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(type, forKey: "t")
        e.encode(width, forKey: "w")
        e.encode(height, forKey: "h")
        e.encodeObject(file, forKey: "f")
    }

    /// The protocol's form (for building fetchable resources).
    var photoSize: PhotoSize {
        PhotoSize(type: type, w: Int(width), h: Int(height), size: file.size, location: file.location)
    }
}
