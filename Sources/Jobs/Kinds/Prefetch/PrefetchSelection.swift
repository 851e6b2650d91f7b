import CloudCore
import Foundation
import MediaBox
import Postbox

/// One file prefetch would download: the fetchable resource (with the freshest file reference
/// Postbox holds), its size, what StorageBox records for it, and the time that orders it.
public struct PrefetchCandidate: Sendable {
    public var resource: any CloudFetchableResource
    public var size: Int64
    /// Peer, peer class, message and content type, as recorded in StorageBox.
    public var info: MediaResourceStorageInfo
    /// The message's date (for an avatar: the chat's newest message in the window).
    public var timestamp: Int32
    /// For a streamable video prefetched as a prefix: the bytes wanted from the start (its
    /// header comes first); nil for a whole file.
    public var prefix: Int64? = nil

    /// The bytes this candidate stands for: the prefix, or the whole file.
    public var wantedBytes: Int64 { min(size, max(prefix ?? size, resource.headerSize)) }

    /// The ranges this candidate wants held.
    private var wanted: Range<Int64> { 0..<wantedBytes }

    /// Whether `box` holds everything this candidate wants (the complete file, or the prefix).
    /// A whole file counts only once complete: a partial file holding every byte (a run killed
    /// before publishing it) is fetched, which publishes it without downloading again. A complete
    /// file a killed run left unindexed is indexed on the way.
    public func isHeld(in box: MediaBox) -> Bool {
        if (try? box.holdsComplete(resource.id, info: info)) == true { return true }
        guard prefix != nil, let held = box.heldRanges(resource.id, location: info.location) else { return false }
        return held.ranges.contains(wanted)
    }

    /// The wanted bytes `box` does not hold yet.
    public func missingBytes(in box: MediaBox) -> Int64 {
        guard let held = box.heldRanges(resource.id, location: info.location) else { return wantedBytes }
        if let size = held.size, held.ranges.contains(0..<size) { return 0 }  // complete
        var inWanted = held.ranges
        inWanted.remove(wanted.upperBound..<Int64.max)
        return max(0, wantedBytes - inWanted.totalBytes)
    }

    public var resourceId: String { resource.id.stringRepresentation }
    public var contentType: MediaContentType { info.contentType }
}

/// Files left out by one rule, counted per rule (the run's `skipped_*` counters).
public struct PrefetchSkips: Sendable, Equatable {
    /// Media items of chats whose category is not prefetched.
    public var category = 0
    /// Media items of a content type that is not prefetched (wallpapers, unknown kinds included).
    public var mediaType = 0
    /// Files larger than their type's cap (for photos: no size variant fits).
    public var sizeCap = 0
    /// Messages older than the lookback window (their media is not decoded), plus avatars of
    /// chats without a message inside it.
    public var lookback = 0
    /// Files not started because the run's byte budget was spent.
    public var budget = 0
    /// Files not started because free space would drop below the floor.
    public var freeSpace = 0
    /// Files not started because the cache would grow past `cacheLimit`.
    public var cacheLimit = 0

    public init() {}
}

/// What Postbox offers for one run: candidates newest first, files already cached, files whose
/// parent no longer holds them, and what each rule left out.
public struct PrefetchSelection: Sendable {
    /// Files to download, newest first (ties: higher message id, then resource id), each resource once.
    public var candidates: [PrefetchCandidate] = []
    /// Files that passed every rule but are complete in the MediaBox already.
    public var alreadyCached = 0
    public var alreadyCachedBytes: Int64 = 0
    /// Files whose reference record says the parent no longer holds them (message deleted).
    public var gone = 0
    public var skips = PrefetchSkips()
    /// Messages inside the window that were looked at.
    public var messagesScanned = 0

    public init() {}

    /// Every file that passed the rules (`candidates` plus those already cached).
    public var selected: Int { candidates.count + alreadyCached }

    /// Scans Postbox: every stored peer whose category is chosen, its messages inside the
    /// lookback window newest first, each media item against the type and size rules, then the
    /// chat's avatar. Reads only; call it inside `Postbox.read`.
    public static func scan(_ tx: Transaction, policy: PrefetchPolicy, now: Int64) throws -> PrefetchSelection {
        var out = PrefetchSelection()
        var seen: Set<String> = []
        let since = policy.windowStart(now: now)
        for peer in try tx.peers.all() {
            let chosen = policy.categories.contains(peer.category)
            let total = try tx.messages.count(peer: peer.id)
            var inWindow = 0
            var newest: Int32?
            try tx.messages.scan(peer: peer.id, newestFirst: true, since: since) { message in
                inWindow += 1
                if newest == nil { newest = message.timestamp }
                for media in message.media {
                    guard let media = media as? any CloudMedia else { continue }
                    guard chosen else { out.skips.category += 1; continue }
                    let info = MediaResourceStorageInfo(
                        peerId: peer.id, peerClass: PeerStorageClass(peer.category), messageId: message.id,
                        contentType: .other)
                    try out.consider(
                        media, parent: .message(message.id), info: info, timestamp: message.timestamp,
                        policy: policy, tx: tx, seen: &seen)
                }
                return true
            }
            out.messagesScanned += inWindow
            out.skips.lookback += max(0, total - inWindow)
            guard let avatar = peer.photo as? CloudAvatarMedia else { continue }
            guard chosen else { out.skips.category += 1; continue }
            guard let newest else {
                if policy.mediaTypes.contains(.avatar) { out.skips.lookback += 1 }
                continue
            }
            try out.consider(
                avatar, parent: .avatar(peer.id),
                info: MediaResourceStorageInfo(peerId: peer.id, peerClass: PeerStorageClass(peer.category), contentType: .avatar),
                timestamp: newest, policy: policy, tx: tx, seen: &seen)
        }
        out.candidates.sort { a, b in
            if a.timestamp != b.timestamp { return a.timestamp > b.timestamp }
            let (ma, mb) = (a.info.messageId?.id ?? 0, b.info.messageId?.id ?? 0)
            if ma != mb { return ma > mb }
            return a.resourceId < b.resourceId
        }
        return out
    }

    /// Moves the candidates `isCached` reports held (complete, or their prefix) to
    /// `alreadyCached` (call outside the Postbox transaction: it may touch the file system).
    public func removingCached(_ isCached: (PrefetchCandidate) -> Bool) -> PrefetchSelection {
        var out = self
        out.candidates = []
        for c in candidates {
            if isCached(c) {
                out.alreadyCached += 1
                out.alreadyCachedBytes += c.wantedBytes
            } else {
                out.candidates.append(c)
            }
        }
        return out
    }

    /// Applies the type and size rules to one media item and adds the chosen file.
    private mutating func consider(
        _ media: any CloudMedia, parent: MediaResourceReference, info base: MediaResourceStorageInfo,
        timestamp: Int32, policy: PrefetchPolicy, tx: Transaction, seen: inout Set<String>
    ) throws {
        var files: [CloudFileDescriptor]
        switch media {
        case let photo as CloudPhotoMedia:
            guard policy.mediaTypes.contains(.photo) else { skips.mediaType += 1; return }
            // The largest variant within the cap: the best picture the cap allows.
            let cap = policy.cap(.photo) ?? .max
            let fitting = photo.sizes.map(\.file).filter { $0.size <= cap }
            guard let best = fitting.max(by: { $0.size < $1.size }) else { skips.sizeCap += 1; return }
            files = [best]
        case let avatar as CloudAvatarMedia:
            // Both variants: the small one for the chat list, the big one for the profile.
            guard policy.mediaTypes.contains(.avatar) else { skips.mediaType += 1; return }
            files = avatar.files
        default:
            files = media.files
        }
        for file in files {
            let type = media is CloudAvatarMedia ? MediaContentType.avatar : file.contentType
            guard type != .other, policy.mediaTypes.contains(type) else { skips.mediaType += 1; continue }
            // A streamable video larger than the prefix: its prefix, whatever its size cap.
            var prefix: Int64?
            if type == .video, ((media as? CloudDocumentMedia)?.headerSize ?? 0) > 0, let p = policy.videoPrefix, file.size > p { prefix = p }
            if prefix == nil, let cap = policy.cap(type), file.size > cap { skips.sizeCap += 1; continue }
            guard seen.insert(file.resourceId).inserted else { continue }
            var reference: Data?
            if let record = try tx.mediaReferences.get(file.resourceId) {
                if record.status == .gone { gone += 1; continue }
                if record.obtainedAt > file.referenceObtainedAt, !record.fileReference.isEmpty { reference = record.fileReference }
            }
            let resources = Self.withReference(media, reference).resources(parent: parent)
            guard let resource = resources.first(where: { $0.id.stringRepresentation == file.resourceId }) else { continue }
            var info = base
            info.contentType = type
            candidates.append(PrefetchCandidate(resource: resource, size: file.size, info: info, timestamp: timestamp, prefix: prefix))
        }
    }

    /// `media` carrying `reference` (a fresher one from the reference table) instead of the one
    /// stored with the message; secret files have none.
    static func withReference(_ media: any CloudMedia, _ reference: Data?) -> any CloudMedia {
        guard let reference else { return media }
        let fresh = FileReference(reference)
        switch media {
        case var photo as CloudPhotoMedia:
            for i in photo.sizes.indices { photo.sizes[i].file.fileReference = fresh }
            return photo
        case var document as CloudDocumentMedia:
            document.file.fileReference = fresh
            return document
        case var avatar as CloudAvatarMedia:
            avatar.small.file.fileReference = fresh
            avatar.big.file.fileReference = fresh
            return avatar
        default:
            return media
        }
    }
}
