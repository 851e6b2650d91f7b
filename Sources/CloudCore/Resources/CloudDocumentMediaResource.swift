import CloudProtocol
import Foundation
import MediaBox

/// A document (file, video, voice, audio, sticker, gif, wallpaper, uploaded file).
/// Id `telegram-cloud-document-<dc>-<id>` as in Telegram-iOS.
public struct CloudDocumentMediaResource: CloudFetchableResource, CustomStringConvertible {
    public let datacenterId: Int
    public let fileId: Int64
    public let accessHash: Int64
    public let size: Int64?
    public let fileName: String?
    public let location: FileLocation
    /// The parent's current reference (a secret; redacted in descriptions).
    public let fileReference: FileReference
    public let reference: MediaResourceReference
    /// A streamable video's header, fetched before anything else (0: none).
    public let headerSize: Int64

    public init(document: Document, reference: MediaResourceReference) {
        self.datacenterId = document.dcId
        self.fileId = document.id
        self.accessHash = document.accessHash
        self.size = document.size
        self.fileName = document.fileName
        self.location = document.location
        self.fileReference = FileReference(document.fileReference)
        self.reference = reference
        self.headerSize = max(0, min(document.headerSize ?? 0, document.size))
    }

    public var id: MediaResourceId { MediaResourceId("telegram-cloud-document-\(datacenterId)-\(fileId)") }

    public var fetchSource: ResourceFetchSource { .cloud(location: location, fileReference: fileReference, parent: reference) }

    public var description: String { "CloudDocumentMediaResource(\(id), size: \(size.map(String.init) ?? "?"), parent: \(reference))" }
}
