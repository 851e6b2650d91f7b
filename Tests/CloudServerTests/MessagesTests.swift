import CloudProtocol
import CloudServer
import Foundation
import XCTest

/// Chat list and history paging, incremental sync with minId, getMessages limits and deleted ids,
/// entity fetches counted per parent.
final class MessagesTests: XCTestCase {
    func testDialogsAndHistoryPaging() async throws {
        let server = try await TestCloud.start {
            $0.dataset.peers = 7; $0.dataset.messagesPerPeer = 45
        }
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[1]
        let p1 = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest(offset: 0, limit: 4)).decode(GetDialogsResponse.self)
        XCTAssertEqual(p1.count, 7)
        XCTAssertEqual(p1.dialogs.count, 4)
        XCTAssertEqual(p1.nextOffset, 4)
        let p2 = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest(offset: 4, limit: 4)).decode(GetDialogsResponse.self)
        XCTAssertEqual(p2.dialogs.count, 3)
        XCTAssertNil(p2.nextOffset)
        let all = p1.dialogs + p2.dialogs
        XCTAssertEqual(Set(all.map(\.peer.id)).count, 7)
        XCTAssertEqual(all.map(\.topMessageDate), all.map(\.topMessageDate).sorted(by: >))
        XCTAssertEqual(Set(all.map(\.peer.kind)), Set(PeerKind.allCases))

        let peer = all[0].peer.id
        var ids: [Int32] = []
        var offsetId: Int32 = 0
        while true {
            let page = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, offsetId: offsetId, limit: 20)).decode(MessagesResponse.self)
            XCTAssertEqual(page.count, 45)
            if page.messages.isEmpty { break }
            XCTAssertEqual(page.messages.map(\.id), page.messages.map(\.id).sorted(by: >), "newest first")
            ids += page.messages.map(\.id)
            offsetId = page.messages.last!.id
        }
        XCTAssertEqual(ids, Array((1...45).reversed()))
        let bad = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: 42, limit: 10))
        XCTAssertEqual(bad.errorName, .peerIdInvalid)
        do { let v = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, limit: 101)).errorName; XCTAssertEqual(v, .limitInvalid) }
    }

    func testIncrementalSyncSeesOnlyNewMessages() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[0]
        let peer = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self).dialogs[0].peer.id
        let first = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer)).decode(MessagesResponse.self)
        let newest = first.messages[0].id
        let none = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, minId: newest)).decode(MessagesResponse.self)
        XCTAssertTrue(none.messages.isEmpty)
        let added = try await TestHTTP.adminPost(server, "messages/add", AddMessagesRequest(peerId: peer, count: 3, withMedia: true)).decode(
            MessagesResponse.self)
        XCTAssertEqual(added.messages.map(\.id), [newest + 1, newest + 2, newest + 3])
        let second = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, minId: newest)).decode(MessagesResponse.self)
        XCTAssertEqual(second.messages.map(\.id), [newest + 3, newest + 2, newest + 1])
        XCTAssertGreaterThanOrEqual(second.messages[0].date, first.messages[0].date)
        let dialogs = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self)
        XCTAssertEqual(dialogs.dialogs[0].peer.id, peer)
        XCTAssertEqual(dialogs.dialogs[0].topMessageId, newest + 3)
    }

    func testGetMessagesByIdLimitsAndDeletion() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[2]
        let peer = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self).dialogs[1].peer.id
        try await TestHTTP.adminPost(server, "counters/reset", Empty())
        var r = try await TestHTTP.api(base, .getMessages, GetMessagesRequest(peerId: peer, ids: [3, 1, 999])).decode(MessagesResponse.self)
        XCTAssertEqual(r.messages.map(\.id), [3, 1])
        try await TestHTTP.adminPost(server, "messages/delete", DeleteMessagesRequest(peerId: peer, ids: [3]))
        r = try await TestHTTP.api(base, .getMessages, GetMessagesRequest(peerId: peer, ids: [3, 1])).decode(MessagesResponse.self)
        XCTAssertEqual(r.messages.map(\.id), [1])
        do {
            let v = try await TestHTTP.api(base, .getMessages, GetMessagesRequest(peerId: peer, ids: Array(1...101))).errorName;
            XCTAssertEqual(v, .limitInvalid)
        }
        do { let v = try await TestHTTP.api(base, .getMessages, GetMessagesRequest(peerId: peer, ids: Array(1...100))).status; XCTAssertEqual(v, 200) }
        do { let v = try await TestHTTP.api(base, .getMessages, GetMessagesRequest(peerId: peer, ids: [0])).errorName; XCTAssertEqual(v, .messageIdInvalid) }
        let c = try await TestHTTP.adminGet(server, "counters", as: CountersResponse.self)
        XCTAssertEqual(c.parents["message:\(peer):1"], 3)
        XCTAssertEqual(c.methods["messages.getMessages"], 5)
    }

    func testEntityFetchesGiveFreshReferencesAndCount() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[0]
        let dialogs = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self)
        let withPhoto = dialogs.dialogs.first { $0.peer.photo != nil }!.peer
        try await TestHTTP.adminPost(server, "counters/reset", Empty())
        let a = try await TestHTTP.api(base, .getPeerPhoto, GetPeerPhotoRequest(peerId: withPhoto.id)).decode(PeerResponse.self)
        let b = try await TestHTTP.api(base, .getPeerPhoto, GetPeerPhotoRequest(peerId: withPhoto.id)).decode(PeerResponse.self)
        XCTAssertNotEqual(a.peer.photo!.fileReference, b.peer.photo!.fileReference)
        XCTAssertEqual(a.peer.photo!.big.location, b.peer.photo!.big.location)
        let s = try await TestHTTP.api(base, .getStickerSet, GetStickerSetRequest(id: 500)).decode(StickerSetResponse.self)
        XCTAssertEqual(s.set.stickers.first?.fileReference, s.set.fileReference)
        do { let v = try await TestHTTP.api(base, .getStickerSet, GetStickerSetRequest(id: 1)).errorName; XCTAssertEqual(v, .stickerSetInvalid) }
        _ = try await TestHTTP.api(base, .getWallPaper, GetWallPaperRequest(id: 700)).decode(WallpaperResponse.self)
        do { let v = try await TestHTTP.api(base, .getWallPaper, GetWallPaperRequest(id: 1)).errorName; XCTAssertEqual(v, .wallpaperInvalid) }
        let contact = dialogs.dialogs.first { $0.peer.kind == .contact }!.peer.id
        _ = try await TestHTTP.api(base, .getStoryById, GetStoryRequest(peerId: contact, id: 1)).decode(StoryResponse.self)
        do { let v = try await TestHTTP.api(base, .getStoryById, GetStoryRequest(peerId: contact, id: 99)).errorName; XCTAssertEqual(v, .storyIdInvalid) }
        let c = try await TestHTTP.adminGet(server, "counters", as: CountersResponse.self)
        XCTAssertEqual(c.parents["avatar:\(withPhoto.id)"], 2)
        XCTAssertEqual(c.parents["stickerset:500"], 1)
        XCTAssertEqual(c.parents["wallpaper:700"], 1)
        XCTAssertEqual(c.parents["story:\(contact):1"], 1)
        let cfg = try await TestHTTP.api(server.dcURLs[1], .getConfig, Empty()).decode(ConfigResponse.self)
        XCTAssertEqual(cfg.thisDc, 2)
        XCTAssertEqual(cfg.dcs.map(\.url), server.dcURLs.map(\.absoluteString))
        XCTAssertEqual(cfg.cdn.url, server.cdnURL.absoluteString)
    }

    func testInProcessAdminAPI() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let listing = server.dataset()
        let peer = listing.peers[0].id
        let before = listing.messageCounts[String(peer)]!
        let added = try XCTUnwrap(server.addMessages(peerId: peer, count: 2))
        XCTAssertEqual(added.map(\.id), [Int32(before + 1), Int32(before + 2)])
        XCTAssertTrue(server.deleteMessages(peerId: peer, ids: [1]))
        XCTAssertEqual(server.dataset().messageCounts[String(peer)], before + 1)
        server.updateFaults(FaultConfig(errorRate: 0.5))
        XCTAssertEqual(server.faults.errorRate, 0.5)
        server.updateFaults(FaultConfig(errorRate: 0))
        let f = listing.files[0]
        let info = try XCTUnwrap(try server.fileInfo(id: f.id))
        XCTAssertEqual(info.size, f.size)
        XCTAssertEqual(info.sha256.count, 64)
        XCTAssertNil(try server.fileInfo(id: 1))
        server.expireReferences(parent: .peerAvatar(peerId: peer))
        server.resetCounters()
        XCTAssertTrue(server.counters().methods.isEmpty)
    }

    func testDatasetIsDeterministicPerSeed() async throws {
        let a = try await TestCloud.start()
        let b = try await TestCloud.start()
        addTeardownBlock {
            await a.stop(); await b.stop()
        }
        let la = try await TestHTTP.adminGet(a, "dataset", as: DatasetListing.self)
        let lb = try await TestHTTP.adminGet(b, "dataset", as: DatasetListing.self)
        XCTAssertEqual(la.files, lb.files)
        XCTAssertEqual(la.peers.map(\.id), lb.peers.map(\.id))
        let f = la.files.first { $0.type == .document }!
        let ha = try await TestCloud.fileInfo(a, f.id).sha256
        let hb = try await TestCloud.fileInfo(b, f.id).sha256
        XCTAssertEqual(ha, hb)
    }
}
