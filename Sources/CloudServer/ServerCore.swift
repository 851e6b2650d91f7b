import CloudCrypto
import CloudProtocol
import Foundation

/// The shared state of one cloudd instance, used by every DC and the CDN listener.
final class ServerCore: Sendable {
    let config: CloudServerConfig
    let dataset: Locked<Dataset>
    let references: References
    let counters = Counters()
    let faults: Faults
    let bytes: FileBytes
    let uploads: UploadStore
    let cdn: CdnFiles
    /// DC id → base URL, and the CDN's, filled in once the listeners are bound.
    let urls = Locked<(dcs: [Int: String], cdn: String)>(([:], ""))
    static let cdnDcId = 101

    init(config: CloudServerConfig, uploadDirectory: String) throws {
        self.config = config
        let secret = SHA256.hash(Data("cloudd-secret-\(config.seed)".utf8) + SecureRandom.bytes(16))
        dataset = Locked(
            DatasetBuilder.build(
                seed: config.seed, config: config.dataset, dcCount: config.dcCount,
                cdnFraction: config.cdnFraction, cdnReuploadFraction: config.cdnReuploadFraction))
        references = References(ttlSeconds: config.referenceTTL, secret: secret)
        faults = Faults(config.faults)
        bytes = FileBytes(seed: config.seed)
        uploads = try UploadStore(directory: uploadDirectory)
        cdn = CdnFiles(secret: secret)
        if config.partHashesAtStart { bytes.computePartHashes(dataset.withLock { Array($0.files.values) }) }
    }

    func file(_ id: Int64) -> ServerFile? { dataset.withLock { $0.files[id] } }

    // MARK: Rendering entities with fresh references

    func render(_ m: Message) -> Message {
        var m = m
        let ref = references.issue(for: m.parent)
        m.media = m.media.map { withReference($0, ref) }
        return m
    }

    func withReference(_ media: MessageMedia, _ ref: Data) -> MessageMedia {
        var media = media
        media.photo?.fileReference = ref
        media.document?.fileReference = ref
        return media
    }

    func render(_ p: Peer) -> Peer {
        var p = p
        if p.photo != nil { p.photo!.fileReference = references.issue(for: .peerAvatar(peerId: p.id)) }
        return p
    }

    func render(_ s: StickerSet) -> StickerSet {
        var s = s
        let ref = references.issue(for: .stickerSet(id: s.id))
        s.fileReference = ref
        s.stickers = s.stickers.map {
            var d = $0; d.fileReference = ref; return d
        }
        return s
    }

    func render(_ w: Wallpaper) -> Wallpaper {
        var w = w
        w.document.fileReference = references.issue(for: .wallpaper(id: w.id))
        return w
    }

    func render(_ s: Story) -> Story {
        var s = s
        s.media = withReference(s.media, references.issue(for: .story(peerId: s.peerId, storyId: s.id)))
        return s
    }
}
