import CloudCrypto
import CloudProtocol
import Foundation

/// The server's world: peers, histories, sticker sets, wallpapers, stories and the files they
/// point at. Entity templates carry empty file references; `References` fills them per answer.
/// Built deterministically by `DatasetBuilder`; mutated by admin calls and uploads.
struct Dataset: Sendable {
    var peers: [Peer] = []
    /// Per peer, ascending by id.
    var messages: [Int64: [Message]] = [:]
    var nextMessageId: [Int64: Int32] = [:]
    var stickerSets: [Int64: StickerSet] = [:]
    var wallpapers: [Int64: Wallpaper] = [:]
    var stories: [String: Story] = [:]
    var files: [Int64: ServerFile] = [:]
    var benchPeerId: Int64?
    var bundleMessage: String?

    var rng: SeededRandom
    var nextFileId: Int64 = 10_000_000
    let config: DatasetConfig
    let seed: UInt64
    let dcCount: Int
    let cdnFraction: Double
    let cdnReuploadFraction: Double
    let baseDate: Int64

    init(seed: UInt64, config: DatasetConfig, dcCount: Int, cdnFraction: Double, cdnReuploadFraction: Double) {
        self.seed = seed
        self.config = config
        self.dcCount = max(1, dcCount)
        self.cdnFraction = cdnFraction
        self.cdnReuploadFraction = cdnReuploadFraction
        self.rng = SeededRandom(seed: seed &* 0x2545_F491_4F6C_DD1D &+ 17)
        let now = Int64(Date().timeIntervalSince1970)
        self.baseDate = config.baseDate ?? (now - now % 86_400)
    }

    func peer(_ id: Int64) -> Peer? { peers.first { $0.id == id } }

    func message(peerId: Int64, id: Int32) -> Message? {
        guard let list = messages[peerId] else { return nil }
        var lo = 0, hi = list.count - 1
        while lo <= hi {
            let mid = (lo + hi) / 2
            if list[mid].id == id { return list[mid] }
            if list[mid].id < id { lo = mid + 1 } else { hi = mid - 1 }
        }
        return nil
    }

    // MARK: File registry

    /// Registers a new file of `size` bytes and returns its location.
    mutating func addFile(
        type: FileLocationType, size: Int64, parent: ParentEntity, thumbSize: String? = nil,
        peerId: Int64? = nil, source: FileSource = .generated, dcId: Int? = nil, allowCdn: Bool = true,
        servedSize: Int64? = nil
    ) -> FileLocation {
        nextFileId += 1
        let id = nextFileId
        let dc = dcId ?? Int(rng.next() % UInt64(dcCount)) + 1
        let loc = FileLocation(type: type, id: id, accessHash: rng.jsonSafeNonZero(), dcId: dc, thumbSize: thumbSize, peerId: peerId)
        let cdn = allowCdn && type != .secret && rng.chance(cdnFraction)
        let reupload = cdn && rng.chance(cdnReuploadFraction)
        files[id] = ServerFile(
            location: loc, size: servedSize ?? size, source: source, cdn: cdn,
            cdnNeedsReupload: reupload, parents: [parent.key])
        return loc
    }

    mutating func addParent(_ parent: ParentEntity, toFile id: Int64) {
        guard var f = files[id], !f.parents.contains(parent.key) else { return }
        f.parents.append(parent.key)
        files[id] = f
    }

    // MARK: Media factories

    static let photoSpecs: [(String, Int, Int64, Int64)] = [
        ("s", 100, 1_500, 6_000), ("m", 320, 12_000, 40_000), ("x", 800, 50_000, 200_000),
        ("y", 1280, 150_000, 600_000), ("w", 2560, 500_000, 2_000_000),
    ]

    mutating func makePhoto(parent: ParentEntity, date: Int64, variants: Int? = nil) -> Photo {
        let n = variants ?? (3 + Int(rng.next() % 3))
        let dc = Int(rng.next() % UInt64(dcCount)) + 1
        var sizes: [PhotoSize] = []
        for (t, px, lo, hi) in Self.photoSpecs.prefix(n) {
            let size = rng.logUniform(lo, hi)
            let loc = addFile(type: .photo, size: size, parent: parent, thumbSize: t, source: .photo(width: px, height: px * 3 / 4), dcId: dc)
            sizes.append(PhotoSize(type: t, w: px, h: px * 3 / 4, size: size, location: loc))
        }
        return Photo(id: rng.jsonSafeNonZero(), accessHash: rng.jsonSafeNonZero(), dcId: dc, date: date, sizes: sizes, fileReference: Data())
    }

    mutating func makeDocument(
        kind: DocumentKind, size: Int64, parent: ParentEntity, date: Int64, name: String? = nil,
        stickerSetId: Int64? = nil, dcId: Int? = nil, allowCdn: Bool = true
    ) -> Document {
        let header = kind == .video ? VideoHeader.size(ofVideo: size) : nil
        let loc = addFile(
            type: .document, size: size, parent: parent, source: header.map { .video(headerSize: $0) } ?? .generated, dcId: dcId,
            allowCdn: allowCdn)
        let mime: String
        let ext: String
        switch kind {
        case .file: mime = "application/octet-stream"; ext = "bin"
        case .video: mime = "video/mp4"; ext = "mp4"
        case .voice: mime = "audio/ogg"; ext = "ogg"
        case .audio: mime = "audio/mpeg"; ext = "mp3"
        case .sticker: mime = "image/webp"; ext = "webp"
        case .gif: mime = "video/mp4"; ext = "mp4"
        case .wallpaper: mime = "image/jpeg"; ext = "jpg"
        }
        let duration: Int? = (kind == .video || kind == .voice || kind == .audio) ? Int(1 + rng.next() % 300) : nil
        return Document(
            id: loc.id, accessHash: loc.accessHash, dcId: loc.dcId, kind: kind, size: size, mimeType: mime,
            fileName: name ?? "\(kind.rawValue)-\(loc.id).\(ext)", duration: duration, stickerSetId: stickerSetId,
            date: date, location: loc, fileReference: Data(), headerSize: header)
    }

    mutating func makeSecretFile(parent: ParentEntity, size plainSize: Int64) -> SecretFile {
        var keyRng = SeededRandom(seed: rng.next())
        var key = Data(count: 32), iv = Data(count: 32)
        for i in 0..<32 { key[i] = UInt8(truncatingIfNeeded: keyRng.next()); iv[i] = UInt8(truncatingIfNeeded: keyRng.next()) }
        let container = (plainSize + 15) / 16 * 16
        let loc = addFile(
            type: .secret, size: plainSize, parent: parent, source: .secret(key: key, iv: iv, plainSize: plainSize),
            allowCdn: false, servedSize: container)
        return SecretFile(
            id: loc.id, accessHash: loc.accessHash, dcId: loc.dcId, size: container, decryptedSize: plainSize,
            key: key, iv: iv, keyFingerprint: SecretFileKey.fingerprint(key: key, iv: iv),
            mimeType: "application/octet-stream", fileName: "secret-\(loc.id).bin", location: loc)
    }

    /// One random media item for a message of `peer` (or nil for a text message).
    mutating func makeRandomMedia(peer: Peer, parent: ParentEntity, date: Int64) -> MessageMedia? {
        let r = rng.next() % 100
        if peer.kind == .secretChat {
            guard r < 60 else { return nil }
            return MessageMedia(secretFile: makeSecretFile(parent: parent, size: rng.logUniform(100, min(2 << 20, config.maxMediaSize))))
        }
        switch r {
        case 0..<35: return nil
        case 35..<60: return MessageMedia(photo: makePhoto(parent: parent, date: date))
        case 60..<72:
            return MessageMedia(document: makeDocument(kind: .file, size: rng.logUniform(2_000, config.maxMediaSize), parent: parent, date: date))
        case 72..<80:
            return MessageMedia(document: makeDocument(kind: .video, size: rng.logUniform(300_000, config.maxMediaSize), parent: parent, date: date))
        case 80..<87:
            return MessageMedia(document: makeDocument(kind: .voice, size: rng.logUniform(4_000, 150_000), parent: parent, date: date))
        case 87..<90:
            return MessageMedia(
                document: makeDocument(kind: .audio, size: rng.logUniform(500_000, min(6 << 20, config.maxMediaSize)), parent: parent, date: date))
        default:
            // A sticker from an existing set (shared file, one more parent), else a gif.
            let setIds = stickerSets.keys.sorted()
            if !setIds.isEmpty {
                let set = stickerSets[setIds[Int(rng.next() % UInt64(setIds.count))]]!
                if !set.stickers.isEmpty {
                    let doc = set.stickers[Int(rng.next() % UInt64(set.stickers.count))]
                    addParent(parent, toFile: doc.id)
                    return MessageMedia(document: doc)
                }
            }
            return MessageMedia(document: makeDocument(kind: .gif, size: rng.logUniform(50_000, 900_000), parent: parent, date: date))
        }
    }

    /// Appends a new message (next id) to a peer's history.
    @discardableResult
    mutating func appendMessage(
        peerId: Int64, date: Int64, text: String? = nil, withMedia: Bool = true,
        media explicit: [MessageMedia]? = nil, randomId: Int64? = nil
    ) -> Message? {
        guard let peer = peer(peerId) else { return nil }
        let id = nextMessageId[peerId, default: 1]
        nextMessageId[peerId] = id + 1
        let parent = ParentEntity.message(peerId: peerId, messageId: id)
        var media: [MessageMedia] = explicit ?? []
        if explicit == nil, withMedia, let m = makeRandomMedia(peer: peer, parent: parent, date: date) { media = [m] }
        let fromId: Int64? = peer.kind == .channel ? nil : (rng.chance(0.5) ? peerId : 1)
        let msg = Message(
            id: id, peerId: peerId, date: date, fromId: fromId, text: text ?? "message \(id) in \(peer.title)",
            media: media, randomId: randomId)
        messages[peerId, default: []].append(msg)
        return msg
    }
}
