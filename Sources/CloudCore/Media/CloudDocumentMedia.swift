import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// A document of a message, story, sticker set or wallpaper: file, video, voice, audio,
/// sticker, gif, wallpaper image or uploaded file.
public struct CloudDocumentMedia: CloudMedia, Equatable {
    public var documentId: Int64
    public var accessHash: Int64
    public var dcId: Int32
    public var kind: DocumentKind
    public var fileName: String?
    /// Seconds, for video/voice/audio.
    public var duration: Int32?
    public var stickerSetId: Int64?
    /// A streamable video's header size (fetched first).
    public var headerSize: Int64?
    /// Unix seconds.
    public var date: Int64
    public var file: CloudFileDescriptor

    /// From the protocol's document; `obtainedAt` is when its reference arrived (Unix seconds).
    public init(_ document: Document, obtainedAt: Int64) {
        documentId = document.id
        accessHash = document.accessHash
        dcId = Int32(clamping: document.dcId)
        kind = document.kind
        fileName = document.fileName
        duration = document.duration.map { Int32(clamping: $0) }
        stickerSetId = document.stickerSetId
        headerSize = document.headerSize
        date = document.date
        let resource = CloudDocumentMediaResource(document: document, reference: .standalone)
        file = CloudFileDescriptor(
            resourceId: resource.id.stringRepresentation, location: document.location, size: document.size,
            contentType: Self.contentType(of: document.kind), mimeType: document.mimeType,
            fileReference: FileReference(document.fileReference), referenceObtainedAt: obtainedAt)
    }

    /// The storage content type of a document kind.
    public static func contentType(of kind: DocumentKind) -> MediaContentType {
        switch kind {
        case .video, .gif: return .video
        case .voice: return .voice
        case .sticker: return .sticker
        case .file, .audio: return .file
        case .wallpaper: return .other
        }
    }

    public static var postboxTypeName: String { "CloudDocumentMedia" }

    public init(decoder d: PostboxDecoder) throws {
        documentId = d.decodeInt64(forKey: "i") ?? 0
        accessHash = d.decodeInt64(forKey: "h") ?? 0
        dcId = d.decodeInt32(forKey: "dc") ?? 1
        kind = DocumentKind(rawValue: d.decodeString(forKey: "k") ?? "") ?? .file
        fileName = d.decodeString(forKey: "n")
        duration = d.decodeInt32(forKey: "du")
        stickerSetId = d.decodeInt64(forKey: "ss")
        headerSize = d.decodeInt64(forKey: "hs")
        date = d.decodeInt64(forKey: "d") ?? 0
        guard let file = try d.decodeObject(CloudFileDescriptor.self, forKey: "f") else {
            throw PostboxError.decoding("document without a file")
        }
        self.file = file
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(documentId, forKey: "i")
        e.encode(accessHash, forKey: "h")
        e.encode(dcId, forKey: "dc")
        e.encode(kind.rawValue, forKey: "k")
        e.encodeIfPresent(fileName, forKey: "n")
        e.encodeIfPresent(duration, forKey: "du")
        e.encodeIfPresent(stickerSetId, forKey: "ss")
        e.encodeIfPresent(headerSize, forKey: "hs")
        e.encode(date, forKey: "d")
        e.encodeObject(file, forKey: "f")
    }

    public var id: MediaId? { MediaId(namespace: CloudMediaNamespace.document, id: documentId) }

    public var files: [CloudFileDescriptor] { [file] }

    /// The protocol's form.
    public var document: Document {
        Document(
            id: documentId, accessHash: accessHash, dcId: Int(dcId), kind: kind, size: file.size, mimeType: file.mimeType ?? "application/octet-stream",
            fileName: fileName, duration: duration.map(Int.init), stickerSetId: stickerSetId, date: date,
            location: file.location, fileReference: file.fileReference.bytes, headerSize: headerSize)
    }

    public func resources(parent: MediaResourceReference) -> [any CloudFetchableResource] {
        [CloudDocumentMediaResource(document: document, reference: parent)]
    }

    public var description: String { "CloudDocumentMedia(\(documentId), \(kind.rawValue), \(file.size) bytes)" }
}
