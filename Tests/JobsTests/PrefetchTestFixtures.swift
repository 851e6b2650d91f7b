import CloudCore
import CloudProtocol
import Foundation
import Jobs
import MediaBox
import Postbox
import TestSupport

/// A Postbox in a temp directory with hand-built peers and messages, so that every prefetch rule
/// decides at least one file. Times are relative to `now`.
struct PrefetchDataset {
    static let now: Int64 = 1_800_000_000
    static let day: Int64 = 86_400
    let dir = TemporaryDirectory(prefix: "prefetch-tests")
    let postbox: Postbox
    let contact = PeerId(101), user = PeerId(102), group = PeerId(103), channel = PeerId(104), secret = PeerId(105), quiet = PeerId(106)
    private var nextFileId: Int64 = 1

    /// Resource ids by name, for assertions.
    var ids: [String: String] = [:]

    init() throws {
        CloudCoreTypes.registerAll()
        postbox = try Postbox(directory: dir.file("postbox"), key: TestRoot.storeKey)
        let now = Self.now, day = Self.day
        var messages: [PostboxMessage] = []
        // Contact: a photo (sizes 10K / 200K / 2M → the 200K one), a 5 MiB video, a 4 MiB file
        // (over the 3 MiB cap), a voice note older than the window; an avatar.
        messages.append(message(contact, 1, now - 100, photo("photo.contact", sizes: [10_000, 200_000, 2 << 20])))
        messages.append(message(contact, 2, now - 200, document("video.contact", .video, 5 << 20)))
        messages.append(message(contact, 3, now - 300, document("file.big", .file, 4 << 20)))
        messages.append(message(contact, 4, now - 8 * day, document("voice.old", .voice, 100_000)))
        // Other user: a sticker (newest overall) and a wallpaper (not a prefetch type).
        messages.append(message(user, 1, now - 50, document("sticker.user", .sticker, 50_000)))
        messages.append(message(user, 2, now - 60, document("wallpaper.user", .wallpaper, 300_000)))
        // Group: a 1 MiB file and a 2 MiB voice note (over the 1 MiB voice cap).
        messages.append(message(group, 1, now - 400, document("file.group", .file, 1 << 20)))
        messages.append(message(group, 2, now - 500, document("voice.big", .voice, 2 << 20)))
        // Channel: a photo whose every size fits.
        messages.append(message(channel, 1, now - 10, photo("photo.channel", sizes: [20_000, 600_000])))
        // Secret chat: an audio file (stored as voice), no reference needed.
        messages.append(message(secret, 1, now - 700, secretFile("secret.audio", 30_000)))
        // A quiet chat: nothing inside the window, so its avatar is left out.
        messages.append(message(quiet, 1, now - 30 * day, document("file.quiet", .file, 10_000)))

        var peers = [
            PostboxPeer(id: contact, category: .contact, title: "Contact", photo: avatar(contact, "avatar.contact")),
            PostboxPeer(id: user, category: .privateChat, title: "User"),
            PostboxPeer(id: group, category: .group, title: "Group"),
            PostboxPeer(id: channel, category: .channel, title: "Channel", photo: avatar(channel, "avatar.channel")),
            PostboxPeer(id: secret, category: .secretChat, title: "Secret"),
        ]
        peers.append(PostboxPeer(id: quiet, category: .privateChat, title: "Quiet", photo: avatar(quiet, "avatar.quiet")))
        let allMessages = messages, allPeers = peers
        try postbox.transactionSync { tx in
            for p in allPeers { try tx.peers.set(p) }
            try tx.messages.add(allMessages)
        }
    }

    func resourceId(_ name: String) -> String { ids[name]! }

    private mutating func location(_ type: FileLocationType, peer: Int64? = nil, thumb: String? = nil) -> FileLocation {
        nextFileId += 1
        return FileLocation(type: type, id: nextFileId, accessHash: nextFileId * 7, dcId: 1, thumbSize: thumb, peerId: peer)
    }

    private func message(_ peer: PeerId, _ id: Int32, _ date: Int64, _ media: any Media) -> PostboxMessage {
        PostboxMessage(id: MessageId(peerId: peer, id: id), timestamp: Int32(date), media: [media])
    }

    /// A photo; `ids[name + ".<i>"]` is its i-th size (smallest first).
    private mutating func photo(_ name: String, sizes: [Int64]) -> CloudPhotoMedia {
        let types = ["s", "m", "x", "y", "w"]
        let photoSizes = sizes.enumerated().map {
            PhotoSize(type: types[$0.offset], w: 100, h: 100, size: $0.element, location: location(.photo, thumb: types[$0.offset]))
        }
        nextFileId += 1
        let media = CloudPhotoMedia(
            Photo(id: nextFileId, accessHash: 1, dcId: 1, date: Self.now, sizes: photoSizes, fileReference: Data("ref-\(name)".utf8)),
            obtainedAt: Self.now - 60)
        for (i, s) in media.sizes.enumerated() { ids["\(name).\(i)"] = s.file.resourceId }
        return media
    }

    private mutating func document(_ name: String, _ kind: DocumentKind, _ size: Int64) -> CloudDocumentMedia {
        let loc = location(.document)
        let media = CloudDocumentMedia(
            Document(
                id: loc.id, accessHash: loc.accessHash, dcId: 1, kind: kind, size: size, mimeType: "application/octet-stream",
                fileName: nil, duration: nil, stickerSetId: nil, date: Self.now, location: loc,
                fileReference: Data("ref-\(name)".utf8)), obtainedAt: Self.now - 60)
        ids[name] = media.file.resourceId
        return media
    }

    private mutating func secretFile(_ name: String, _ size: Int64) -> CloudSecretFileMedia {
        let loc = location(.secret)
        let media = CloudSecretFileMedia(
            SecretFile(
                id: loc.id, accessHash: loc.accessHash, dcId: 1, size: (size + 15) / 16 * 16, decryptedSize: size,
                key: Data(count: 32), iv: Data(count: 32), keyFingerprint: 0, mimeType: "audio/ogg",
                fileName: nil, location: loc), obtainedAt: Self.now - 60)
        ids[name] = media.file.resourceId
        return media
    }

    private mutating func avatar(_ peer: PeerId, _ name: String) -> CloudAvatarMedia {
        let small = PhotoSize(type: "a", w: 160, h: 160, size: 10_000, location: location(.peerPhoto, peer: peer.rawValue, thumb: "a"))
        let big = PhotoSize(type: "c", w: 640, h: 640, size: 100_000, location: location(.peerPhoto, peer: peer.rawValue, thumb: "c"))
        nextFileId += 1
        let media = CloudAvatarMedia(
            peerId: peer.rawValue, photo: PeerPhoto(photoId: nextFileId, dcId: 1, small: small, big: big, fileReference: Data("ref-\(name)".utf8)),
            obtainedAt: Self.now - 60)
        ids[name + ".small"] = media.small.file.resourceId
        ids[name + ".big"] = media.big.file.resourceId
        return media
    }

    /// The selection of `policy` at `now`.
    func select(_ policy: PrefetchPolicy) throws -> PrefetchSelection {
        try postbox.readSync { try PrefetchSelection.scan($0, policy: policy, now: Self.now) }
    }
}
