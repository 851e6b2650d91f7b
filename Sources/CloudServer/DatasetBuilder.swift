import CloudProtocol
import Foundation

/// Builds the deterministic synthetic dataset from a seed and a `DatasetConfig`.
enum DatasetBuilder {
    static let kinds: [PeerKind] = [.contact, .user, .group, .channel, .secretChat]
    static let firstPeerId: Int64 = 1_000_001

    static func build(seed: UInt64, config: DatasetConfig, dcCount: Int, cdnFraction: Double, cdnReuploadFraction: Double) -> Dataset {
        var ds = Dataset(seed: seed, config: config, dcCount: dcCount, cdnFraction: cdnFraction, cdnReuploadFraction: cdnReuploadFraction)
        let base = ds.baseDate

        // Sticker sets first, so sticker messages can reuse their documents.
        for s in 0..<config.stickerSets {
            let setId = Int64(500 + s)
            let parent = ParentEntity.stickerSet(id: setId)
            var stickers: [Document] = []
            for _ in 0..<config.stickersPerSet {
                stickers.append(
                    ds.makeDocument(kind: .sticker, size: ds.rng.logUniform(8_000, 64_000), parent: parent, date: base - 86_400 * 30, stickerSetId: setId))
            }
            let thumbSize = ds.rng.logUniform(2_000, 12_000)
            let thumbLoc = ds.addFile(type: .stickerSetThumb, size: thumbSize, parent: parent, thumbSize: "s")
            ds.stickerSets[setId] = StickerSet(
                id: setId, accessHash: ds.rng.jsonSafeNonZero(), shortName: "set\(s)", title: "Sticker set \(s)",
                thumb: PhotoSize(type: "s", w: 100, h: 100, size: thumbSize, location: thumbLoc),
                stickers: stickers, fileReference: Data())
        }

        // Wallpapers.
        for w in 0..<config.wallpapers {
            let wid = Int64(700 + w)
            let doc = ds.makeDocument(
                kind: .wallpaper, size: ds.rng.logUniform(150_000, 1_500_000), parent: .wallpaper(id: wid), date: base - 86_400 * 60, name: "wallpaper-\(w).jpg"
            )
            ds.wallpapers[wid] = Wallpaper(id: wid, slug: "wp\(w)", document: doc)
        }

        // Peers with avatars and histories spread over the last 7 days.
        for i in 0..<config.peers {
            let pid = firstPeerId + Int64(i)
            let kind = kinds[i % kinds.count]
            var peer = Peer(id: pid, kind: kind, title: "\(kind.rawValue.capitalized) \(i)", username: kind == .secretChat ? nil : "peer\(i)")
            if kind != .secretChat, i % 7 != 6 {
                peer.photo = makeAvatar(&ds, peerId: pid)
            }
            ds.peers.append(peer)
            ds.messages[pid] = []
            let n = config.messagesPerPeer
            for m in 0..<n {
                let date = base - Int64(7 * 86_400) + Int64(7 * 86_400) * Int64(m + 1) / Int64(max(n, 1)) - Int64(ds.rng.next() % 600)
                ds.appendMessage(peerId: pid, date: date)
            }
            if kind == .contact || kind == .channel {
                for s in 0..<config.storiesPerPeer {
                    let sid = Int32(s + 1)
                    let parent = ParentEntity.story(peerId: pid, storyId: sid)
                    let media: MessageMedia =
                        s % 2 == 0
                        ? MessageMedia(photo: ds.makePhoto(parent: parent, date: base - 3_600))
                        : MessageMedia(
                            document: ds.makeDocument(
                                kind: .video, size: ds.rng.logUniform(200_000, min(3 << 20, config.maxMediaSize)), parent: parent, date: base - 3_600))
                    ds.stories["\(pid):\(sid)"] = Story(id: sid, peerId: pid, date: base - 3_600, expireDate: base + 86_400 - 3_600, media: media)
                }
            }
        }

        // The bundle: one message with many resources (revalidation dedup tests).
        if config.bundleSize > 0, let group = ds.peers.first(where: { $0.kind == .group }) ?? ds.peers.first {
            for b in 0..<max(1, config.bundleCount) {
                let mid = ds.nextMessageId[group.id, default: 1]
                let parent = ParentEntity.message(peerId: group.id, messageId: mid)
                var media: [MessageMedia] = []
                for _ in 0..<config.bundleSize {
                    media.append(MessageMedia(document: ds.makeDocument(kind: .file, size: ds.rng.logUniform(4_000, 40_000), parent: parent, date: base)))
                }
                ds.appendMessage(peerId: group.id, date: base, text: "bundle of \(config.bundleSize)", media: media)
                if b == 0 { ds.bundleMessage = parent.key }
            }
        }

        // Benchmark files: one document per message in a dedicated channel, never via CDN.
        if !config.bulkFiles.isEmpty || !config.bigFiles.isEmpty || !config.benchVideos.isEmpty {
            let pid = firstPeerId + Int64(config.peers)
            ds.peers.append(Peer(id: pid, kind: .channel, title: "Bench", username: "bench"))
            ds.messages[pid] = []
            ds.benchPeerId = pid
            var sizes: [Int64] = []
            for spec in config.bulkFiles {
                for _ in 0..<spec.count {
                    sizes.append(spec.minSize + Int64(ds.rng.next() % UInt64(spec.maxSize - spec.minSize + 1)))
                }
            }
            sizes += config.bigFiles
            for (k, size) in sizes.enumerated() {
                let mid = ds.nextMessageId[pid, default: 1]
                let parent = ParentEntity.message(peerId: pid, messageId: mid)
                let doc = ds.makeDocument(kind: .file, size: size, parent: parent, date: base - Int64(sizes.count - k), name: "bench-\(k).bin", allowCdn: false)
                ds.appendMessage(peerId: pid, date: base - Int64(sizes.count - k), text: "bench file \(k)", media: [MessageMedia(document: doc)])
            }
            for (k, size) in config.benchVideos.enumerated() {
                let mid = ds.nextMessageId[pid, default: 1]
                let parent = ParentEntity.message(peerId: pid, messageId: mid)
                let doc = ds.makeDocument(kind: .video, size: size, parent: parent, date: base, name: "bench-video-\(k).mp4", allowCdn: false)
                ds.appendMessage(peerId: pid, date: base, text: "bench video \(k)", media: [MessageMedia(document: doc)])
            }
        }
        return ds
    }

    static func makeAvatar(_ ds: inout Dataset, peerId: Int64) -> PeerPhoto {
        let parent = ParentEntity.peerAvatar(peerId: peerId)
        let dc = Int(ds.rng.next() % UInt64(ds.dcCount)) + 1
        let smallSize = ds.rng.logUniform(3_000, 12_000)
        let bigSize = ds.rng.logUniform(30_000, 150_000)
        let small = ds.addFile(type: .peerPhoto, size: smallSize, parent: parent, thumbSize: "a", peerId: peerId, dcId: dc)
        let big = ds.addFile(type: .peerPhoto, size: bigSize, parent: parent, thumbSize: "c", peerId: peerId, dcId: dc)
        return PeerPhoto(
            photoId: ds.rng.jsonSafeNonZero(), dcId: dc,
            small: PhotoSize(type: "a", w: 160, h: 160, size: smallSize, location: small),
            big: PhotoSize(type: "c", w: 640, h: 640, size: bigSize, location: big),
            fileReference: Data())
    }
}
