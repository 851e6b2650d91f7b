/// The kind of file a `FileLocation` points at; mirrors Telegram's `InputFileLocation` variants.
public enum FileLocationType: String, Codable, Sendable, CaseIterable {
    case photo  // one size variant of a message/story photo
    case document  // document, video, voice, sticker, wallpaper, uploaded file
    case peerPhoto  // a peer's avatar (small or big)
    case stickerSetThumb  // a sticker set's thumbnail
    case secret  // an AES-256-IGE encrypted secret-chat file (no reference needed)
}

/// Where a file lives: enough for `upload.getFile` to find it and for the client to route it.
///
/// `id` is unique per physical file across the whole dataset (each photo size has its own id).
/// `dcId` names the DC that serves it; asking another DC answers `FILE_MIGRATE_<dcId>`.
public struct FileLocation: Codable, Hashable, Sendable {
    public var type: FileLocationType
    /// Unique file id (< 2^53 so every JSON tool reads it exactly).
    public var id: Int64
    /// Must match the server's; a mismatch answers `LOCATION_INVALID`.
    public var accessHash: Int64
    /// The DC that stores the file.
    public var dcId: Int
    /// Photo size letter (`s`, `m`, `x`, `y`, `w`) for `photo`, `a`/`c` (small/big) for `peerPhoto`.
    public var thumbSize: String?
    /// The owning peer for `peerPhoto`.
    public var peerId: Int64?

    public init(type: FileLocationType, id: Int64, accessHash: Int64, dcId: Int, thumbSize: String? = nil, peerId: Int64? = nil) {
        self.type = type
        self.id = id
        self.accessHash = accessHash
        self.dcId = dcId
        self.thumbSize = thumbSize
        self.peerId = peerId
    }

    /// A stable string usable as a cache file name: `cloud-<type>-<dc>-<id>[-<size>]`.
    public var stableKey: String {
        var s = "cloud-\(type.rawValue)-\(dcId)-\(id)"
        if let t = thumbSize { s += "-\(t)" }
        return s
    }
}
