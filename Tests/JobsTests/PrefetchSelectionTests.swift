import CloudCore
import Foundation
import Jobs
import MediaBox
import Postbox
import TestSupport
import XCTest

/// Prefetch's selection over a real Postbox: each rule (category, type, size cap, lookback)
/// decides at least one file of `PrefetchDataset`, newest first, and cached, gone and refreshed
/// references are handled.
final class PrefetchSelectionTests: XCTestCase {
    func testDefaultPolicySelectsNewestFirstWithinCapsAndWindow() throws {
        let d = try PrefetchDataset()
        let s = try d.select(PrefetchPolicy())
        let expected = [
            "photo.channel.1", "avatar.channel.small", "avatar.channel.big", "sticker.user", "photo.contact.1",
            "avatar.contact.small", "avatar.contact.big", "video.contact", "file.group", "secret.audio",
        ]
        // Avatars tie with their chat's newest message and sort by resource id among themselves.
        XCTAssertEqual(s.candidates.map(\.resourceId), expected.map(d.resourceId))
        XCTAssertEqual(s.candidates.map(\.timestamp), s.candidates.map(\.timestamp).sorted(by: >), "newest first")
        XCTAssertEqual(s.candidates.first?.resourceId, d.resourceId("photo.channel.1"))
        XCTAssertEqual(s.candidates.last?.resourceId, d.resourceId("secret.audio"))
        XCTAssertEqual(s.skips.sizeCap, 2, "the 4 MiB file and the 2 MiB voice note")
        XCTAssertEqual(s.skips.mediaType, 1, "the wallpaper")
        XCTAssertEqual(s.skips.lookback, 3, "two old messages and the quiet chat's avatar")
        XCTAssertEqual(s.skips.category, 0)
        XCTAssertEqual(s.messagesScanned, 9)
        XCTAssertEqual(s.selected, 10)

        // Photos: the largest size within the cap (200 KB of 10 KB / 200 KB / 2 MiB).
        let photo = try XCTUnwrap(s.candidates.first { $0.resourceId == d.resourceId("photo.contact.1") })
        XCTAssertEqual(photo.size, 200_000)
        // StorageBox info: peer, class, message and content type.
        XCTAssertEqual(photo.info.peerId, d.contact)
        XCTAssertEqual(photo.info.peerClass, .privateChats)
        XCTAssertEqual(photo.info.messageId, MessageId(peerId: d.contact, id: 1))
        XCTAssertEqual(photo.info.contentType, .photo)
        let secret = try XCTUnwrap(s.candidates.first { $0.resourceId == d.resourceId("secret.audio") })
        XCTAssertEqual(secret.info.contentType, .voice)
        XCTAssertEqual(secret.info.peerClass, .privateChats)
        let avatar = try XCTUnwrap(s.candidates.first { $0.resourceId == d.resourceId("avatar.channel.big") })
        XCTAssertEqual(avatar.info.contentType, .avatar)
        XCTAssertNil(avatar.info.messageId)
        XCTAssertEqual(avatar.info.peerClass, .channels)
    }

    func testCategoryTypeAndCapRulesDecide() throws {
        let d = try PrefetchDataset()
        var policy = PrefetchPolicy(categories: PrefetchPolicy.categories([.contacts, .groups]))
        policy.mediaTypes.remove(.sticker)
        policy.sizeCaps[.file] = 512 << 10
        let s = try d.select(policy)
        XCTAssertEqual(
            Set(s.candidates.map(\.resourceId)),
            Set(["photo.contact.1", "video.contact", "avatar.contact.small", "avatar.contact.big"].map(d.resourceId)))
        XCTAssertEqual(s.skips.category, 6, "user ×2, secret, channel photo, channel and quiet avatars")
        XCTAssertEqual(s.skips.sizeCap, 3, "both files over 512 KiB and the big voice note")
        XCTAssertEqual(s.skips.lookback, 2)

        // Types: only videos, with a cap the video exceeds.
        let videos = try d.select(PrefetchPolicy(mediaTypes: [.video], sizeCaps: [.video: 1 << 20]))
        XCTAssertEqual(videos.candidates.count, 0)
        XCTAssertEqual(videos.skips.sizeCap, 1)
        XCTAssertEqual(videos.skips.mediaType, 10, "every photo, file, voice, sticker, wallpaper and avatar")

        // Lookback: a 150 s window keeps only what is newer.
        let recent = try d.select(PrefetchPolicy(lookback: 150))
        XCTAssertEqual(
            Set(recent.candidates.map(\.resourceId)),
            Set(
                [
                    "photo.channel.1", "avatar.channel.small", "avatar.channel.big", "sticker.user", "photo.contact.1",
                    "avatar.contact.small", "avatar.contact.big",
                ].map(d.resourceId)))
        XCTAssertEqual(recent.skips.lookback, 3 + 2 + 1 + 1 + 1, "older messages (contact 3, group 2, secret, quiet) and the quiet chat's avatar")
    }

    func testCachedGoneAndFresherReferences() throws {
        let d = try PrefetchDataset()
        let now = PrefetchDataset.now
        try d.postbox.transactionSync { tx in
            try tx.mediaReferences.set(
                MediaReferenceRecord(
                    resourceId: d.resourceId("sticker.user"), parent: .message(MessageId(peerId: d.user, id: 1)),
                    fileReference: Data("x".utf8), obtainedAt: now, status: .gone))
            try tx.mediaReferences.set(
                MediaReferenceRecord(
                    resourceId: d.resourceId("video.contact"), parent: .message(MessageId(peerId: d.contact, id: 2)),
                    fileReference: Data("fresh".utf8), obtainedAt: now))
        }
        let box = try MediaBox(basePath: d.dir.file("media"))
        try box.store(Data(count: 16), id: MediaResourceId(d.resourceId("file.group")), info: MediaResourceStorageInfo(contentType: .file))
        let s = try d.select(PrefetchPolicy()).removingCached { $0.isHeld(in: box) }
        XCTAssertEqual(s.gone, 1)
        XCTAssertEqual(s.alreadyCached, 1)
        XCTAssertEqual(s.alreadyCachedBytes, 1 << 20)
        XCTAssertEqual(s.candidates.count, 8)
        XCTAssertFalse(s.candidates.contains { $0.resourceId == d.resourceId("sticker.user") || $0.resourceId == d.resourceId("file.group") })
        let video = try XCTUnwrap(s.candidates.first { $0.resourceId == d.resourceId("video.contact") })
        guard case let .cloud(_, reference, parent) = video.resource.fetchSource else { return XCTFail("a cloud resource") }
        XCTAssertEqual(reference.bytes, Data("fresh".utf8), "the reference table's newer reference wins")
        XCTAssertEqual(parent, .message(MessageId(peerId: d.contact, id: 2)))
        let photo = try XCTUnwrap(s.candidates.first { $0.resourceId == d.resourceId("photo.contact.1") })
        guard case let .cloud(_, stored, _) = photo.resource.fetchSource else { return XCTFail("a cloud resource") }
        XCTAssertEqual(stored.bytes, Data("ref-photo.contact".utf8))
    }
}
