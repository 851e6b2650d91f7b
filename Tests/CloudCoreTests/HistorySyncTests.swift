import CloudCore
import CloudProtocol
import CloudServer
import Foundation
import Postbox
import Synchronization
import TestSupport
import XCTest

/// `HistorySync` against a real in-process cloudd and a real Postbox file: first sync,
/// incremental runs that fetch only what is new (the server's counters prove it), resume after
/// an interruption through holes, and bad answers that store nothing.
final class HistorySyncTests: XCTestCase {
    var directory: TemporaryDirectory!

    override func setUp() {
        directory = TemporaryDirectory(prefix: "history-sync")
    }

    func makePostbox() throws -> Postbox {
        try Postbox(directory: directory.file("db"), key: TestRoot.storeKey)
    }

    func options(_ tweak: (inout HistorySyncOptions) -> Void = { _ in }) -> HistorySyncOptions {
        var o = HistorySyncOptions()
        o.initialMessages = 10
        o.pageSize = 4
        o.concurrency = 2
        o.requestRate = nil
        tweak(&o)
        return o
    }

    func testFirstSyncThenOnlyNewMessages() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let postbox = try makePostbox()

        // 1. Empty Postbox: 10 newest messages of each of the 5 peers, 3 pages each (4 + 4 + 2).
        f.server.resetCounters()
        let first = try await HistorySync(client: client, postbox: postbox, options: options()).run()
        XCTAssertEqual(first.peersListed, 5)
        XCTAssertEqual(first.peersSynced, 5)
        XCTAssertEqual(first.messagesStored, 50)
        XCTAssertEqual(first.holesOpen, 0)
        XCTAssertEqual(f.methodCount(.getHistory), 15)
        XCTAssertEqual(f.methodCount(.getDialogs), 1)
        let listing = f.server.dataset()
        let peers = listing.peers.map(\.id)
        let stored = try await postbox.read { tx in
            try peers.map { p in (try tx.messages.count(peer: PeerId(p)), try tx.messages.maxId(peer: PeerId(p)), try tx.syncStates.get(PeerId(p))?.maxSyncedId)
            }
        }
        for s in stored {
            XCTAssertEqual(s.0, 10)
            XCTAssertEqual(s.1, 16)
            XCTAssertEqual(s.2, 16)
        }

        // Peers, their categories and avatars; media decoded as cloud media; every reference recorded.
        let (storedPeers, refCount, expectedRefs, media) = try await postbox.read { tx -> ([PostboxPeer], Int, Int, [any CloudMedia]) in
            let peers = try tx.peers.all()
            var expected = 0
            var media: [any CloudMedia] = []
            for p in peers {
                expected += (p.photo as? CloudAvatarMedia)?.files.count ?? 0
                try tx.messages.scan(peer: p.id) { m in
                    let cloud = m.media.compactMap { $0 as? any CloudMedia }
                    XCTAssertEqual(cloud.count, m.media.count)
                    media += cloud
                    expected += cloud.flatMap(\.files).filter { !$0.fileReference.isEmpty }.count
                    for file in cloud.flatMap(\.files) where !file.fileReference.isEmpty {
                        let record = try tx.mediaReferences.get(file.resourceId)
                        XCTAssertEqual(record?.parent, .message(m.id))
                        XCTAssertEqual(record?.fileReference, file.fileReference.bytes)
                    }
                    return true
                }
            }
            return (peers, try tx.mediaReferences.count(), expected, media)
        }
        XCTAssertEqual(storedPeers.count, 5)
        XCTAssertEqual(Set(storedPeers.map(\.category)), Set(PeerCategory.allCases))
        XCTAssertTrue(storedPeers.contains { $0.photo is CloudAvatarMedia })
        XCTAssertGreaterThan(expectedRefs, 0)
        XCTAssertEqual(refCount, expectedRefs)
        XCTAssertEqual(first.referencesRecorded, expectedRefs)
        XCTAssertTrue(media.contains { $0 is CloudPhotoMedia })
        XCTAssertTrue(media.contains { $0 is CloudDocumentMedia })
        let secret = try XCTUnwrap(media.compactMap { $0 as? CloudSecretFileMedia }.first)
        XCTAssertEqual(secret.key.count, 32)
        XCTAssertFalse(secret.description.contains(secret.key.base64EncodedString()))
        XCTAssertFalse(String(reflecting: secret).contains(secret.key.base64EncodedString()))
        // The descriptor's resource id is the fetcher's.
        let photo = try XCTUnwrap(media.compactMap { $0 as? CloudPhotoMedia }.first)
        XCTAssertEqual(photo.resources(parent: .standalone).map(\.id.stringRepresentation), photo.files.map(\.resourceId))

        // 2. Nothing new: the chat list only, no history request.
        f.server.resetCounters()
        let second = try await HistorySync(client: client, postbox: postbox, options: options()).run()
        XCTAssertEqual(second.messagesFetched, 0)
        XCTAssertEqual(second.peersSynced, 5)
        XCTAssertEqual(f.methodCount(.getHistory), 0)
        XCTAssertEqual(f.methodCount(.getDialogs), 1)

        // 3. New messages on two peers: only those are fetched (1 page + 2 pages).
        let a = peers[0], b = peers[1]
        XCTAssertEqual(f.server.addMessages(peerId: a, count: 3)?.count, 3)
        XCTAssertEqual(f.server.addMessages(peerId: b, count: 6)?.count, 6)
        f.server.resetCounters()
        let third = try await HistorySync(client: client, postbox: postbox, options: options()).run()
        XCTAssertEqual(third.messagesFetched, 9)
        XCTAssertEqual(third.messagesStored, 9)
        XCTAssertEqual(third.peersUpdated, 2)
        XCTAssertEqual(f.methodCount(.getHistory), 3)
        XCTAssertEqual(third.holesOpen, 0)
        let counts = try await postbox.read { tx in
            (
                try tx.messages.count(peer: PeerId(a)), try tx.messages.count(peer: PeerId(b)),
                try tx.syncStates.get(PeerId(a))?.maxSyncedId, try tx.syncStates.get(PeerId(b))?.maxSyncedId
            )
        }
        XCTAssertEqual(counts.0, 13)
        XCTAssertEqual(counts.1, 16)
        XCTAssertEqual(counts.2, 19)
        XCTAssertEqual(counts.3, 22)
    }

    func testInterruptedSyncResumesThroughItsHole() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let postbox = try makePostbox()
        let peer = f.server.dataset().peers[2].id
        let opts = options {
            $0.peerIds = [peer]; $0.initialMessages = 12; $0.concurrency = 1
        }

        // Interrupt right after the first page is committed (as a crash or SIGTERM would).
        let interrupted = HistorySync(
            client: client, postbox: postbox, options: opts,
            observer: { event in
                if case .holeRecorded = event { withUnsafeCurrentTask { $0?.cancel() } }
            })
        do {
            _ = try await interrupted.run()
            XCTFail("expected the run to stop")
        } catch is CancellationError {}
        let after = try await postbox.read { tx in
            (try tx.messages.count(peer: PeerId(peer)), try tx.holes.holes(peer: PeerId(peer)), try tx.syncStates.get(PeerId(peer))?.maxSyncedId)
        }
        XCTAssertEqual(after.0, 4, "one committed page")
        XCTAssertEqual(after.1, [5...12], "the rest of the initial window is a hole")
        XCTAssertEqual(after.2, 16)

        // The next run fetches only the hole (two pages), nothing above it.
        f.server.resetCounters()
        let resumed = try await HistorySync(client: client, postbox: postbox, options: opts).run()
        XCTAssertEqual(resumed.messagesStored, 8)
        XCTAssertEqual(resumed.holesFilled, 1)
        XCTAssertEqual(resumed.holesOpen, 0)
        XCTAssertEqual(f.methodCount(.getHistory), 2)
        let final = try await postbox.read { tx in
            var ids: [Int32] = []
            try tx.messages.scan(peer: PeerId(peer)) {
                ids.append($0.id.id); return true
            }
            return (ids, try tx.holes.holes(peer: PeerId(peer)))
        }
        XCTAssertEqual(final.0, Array((5...16).reversed()))
        XCTAssertEqual(final.1, [])

        // With fillHoles off a hole stays for later.
        try await postbox.transaction { tx in try tx.holes.add(peer: PeerId(peer), range: 1...4) }
        let skipped = try await HistorySync(
            client: client, postbox: postbox,
            options: options {
                $0.peerIds = [peer]; $0.fillHoles = false
            }
        ).run()
        XCTAssertEqual(skipped.holesOpen, 1)
        let filled = try await HistorySync(client: client, postbox: postbox, options: options { $0.peerIds = [peer] }).run()
        XCTAssertEqual(filled.messagesStored, 4)
        XCTAssertEqual(filled.holesOpen, 0)
    }

    func testBadAnswerMidSyncStoresNothingFromIt() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let postbox = try makePostbox()
        _ = try await HistorySync(client: client, postbox: postbox, options: options()).run()
        let peer = f.server.dataset().peers[0].id
        _ = f.server.addMessages(peerId: peer, count: 5)
        let before = try await postbox.read { tx in
            (try tx.messages.count(peer: PeerId(peer)), try tx.syncStates.get(PeerId(peer)), try tx.mediaReferences.count())
        }

        // The chat list answers well; every history answer is not JSON.
        let server = f.server
        let sync = HistorySync(
            client: client, postbox: postbox, options: options(),
            observer: { event in
                if case .dialogsPage = event { server.updateFaults(FaultConfig(malformed: .badJSON, malformedRate: 1)) }
            })
        do {
            _ = try await sync.run()
            XCTFail("expected a bad answer")
        } catch let error as CloudClientError {
            guard case .badAnswer(let method, _, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(method, "messages.getHistory")
            XCTAssertTrue(reason.contains("not valid JSON"), reason)
        }
        let after = try await postbox.read { tx in
            (try tx.messages.count(peer: PeerId(peer)), try tx.syncStates.get(PeerId(peer)), try tx.mediaReferences.count())
        }
        XCTAssertEqual(after.0, before.0)
        XCTAssertEqual(after.1, before.1)
        XCTAssertEqual(after.2, before.2)

        // Answers good again: the next run picks the 5 new messages up.
        f.server.updateFaults(FaultConfig(malformed: MalformedAnswer.none, malformedRate: 0))
        let next = try await HistorySync(client: client, postbox: postbox, options: options()).run()
        XCTAssertEqual(next.messagesStored, 5)
    }

    func testCategoriesPeersAndDryRun() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let postbox = try makePostbox()
        let dry = try await HistorySync(client: client, postbox: postbox, options: options { $0.dryRun = true }).run()
        XCTAssertEqual(dry.peersSelected, 5)
        XCTAssertEqual(dry.messagesPending, 50)
        XCTAssertEqual(dry.messagesStored, 0)
        let nothing = try await postbox.read { tx in (try tx.peers.count(), try tx.mediaReferences.count()) }
        XCTAssertEqual(nothing.0, 0)
        XCTAssertEqual(nothing.1, 0)

        let groups = try await HistorySync(
            client: client, postbox: postbox,
            options: options { $0.categories = HistorySyncOptions.categories(words: ["group", "channel"]) }
        ).run()
        XCTAssertEqual(groups.peersSelected, 2)
        XCTAssertEqual(groups.messagesStored, 20)
        let limited = try await HistorySync(client: client, postbox: postbox, options: options { $0.maxPeers = 1 }).run()
        XCTAssertEqual(limited.peersSelected, 1)
        XCTAssertEqual(HistorySyncOptions.categories(words: ["private"]), [.contact, .privateChat, .secretChat])
    }
}
