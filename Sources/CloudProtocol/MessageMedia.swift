/// What kind of media a `MessageMedia` holds.
public enum MessageMediaType: String, Codable, Sendable {
    case photo
    case document
    case secretFile
}

/// One media item of a message (or story): exactly one of `photo`, `document`, `secretFile`
/// is set, as named by `type`. Flat optional fields keep the JSON simple for every client.
public struct MessageMedia: Codable, Hashable, Sendable {
    public var type: MessageMediaType
    public var photo: Photo?
    public var document: Document?
    public var secretFile: SecretFile?

    public init(photo: Photo) { self.type = .photo; self.photo = photo }
    public init(document: Document) { self.type = .document; self.document = document }
    public init(secretFile: SecretFile) { self.type = .secretFile; self.secretFile = secretFile }

    /// Every file location of this media item (all photo sizes, the document, the secret file).
    public var locations: [FileLocation] {
        switch type {
        case .photo: return photo?.sizes.map(\.location) ?? []
        case .document: return document.map { [$0.location] } ?? []
        case .secretFile: return secretFile.map { [$0.location] } ?? []
        }
    }
}
