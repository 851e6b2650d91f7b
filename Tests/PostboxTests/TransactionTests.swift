import Foundation
import Postbox
import TestSupport
import XCTest

struct TestPhoto: Media, Equatable {
    var id: MediaId?
    var resourceIds: [String]
    init(id: Int64, resourceIds: [String]) {
        self.id = MediaId(namespace: 1, id: id)
        self.resourceIds = resourceIds
    }
    init(decoder: PostboxDecoder) throws {
        id = decoder.decodeInt64(forKey: "id").map { MediaId(namespace: 1, id: $0) }
        resourceIds = decoder.decodeStringArray(forKey: "r") ?? []
    }
    func encode(_ e: PostboxEncoder) {
        e.encodeIfPresent(id?.id, forKey: "id")
        e.encode(resourceIds, forKey: "r")
    }
}

enum Boom: Error { case boom }

final class TransactionTests: XCTestCase {
    override func setUp() { PostboxTypeRegistry.register(TestPhoto.self) }

    func testCommitAndReadBack() async throws {
        try await forEachEngine { store in
            let postbox = try store.postbox()
            try await postbox.transaction { tx in
                try tx.peers.set(Peer(id: PeerId(1), category: .channel, title: "news", photo: TestPhoto(id: 9, resourceIds: ["a"])))
                try tx.messages.add([
                    Message(id: MessageId(peerId: PeerId(1), id: 10), timestamp: 100, text: "hi", media: [TestPhoto(id: 5, resourceIds: ["r1", "r2"])])
                ])
            }
            let (peer, message) = try await postbox.read { tx in (try tx.peers.get(PeerId(1)), try tx.messages.get(MessageId(peerId: PeerId(1), id: 10))) }
            XCTAssertEqual(peer?.title, "news")
            XCTAssertEqual((peer?.photo as? TestPhoto)?.resourceIds, ["a"])
            XCTAssertEqual(message?.text, "hi")
            XCTAssertEqual((message?.media.first as? TestPhoto)?.resourceIds, ["r1", "r2"])
            let holders = try await postbox.read { try $0.messages.messages(withMedia: MediaId(namespace: 1, id: 5)) }
            XCTAssertEqual(holders, [MessageId(peerId: PeerId(1), id: 10)])
        }
    }

    func testThrowingBodyRollsBackEverything() async throws {
        try await forEachEngine { store in
            let postbox = try store.postbox()
            do {
                try await postbox.transaction { tx in
                    try tx.peers.set(Peer(id: PeerId(1), category: .group, title: "g"))
                    try tx.messages.add([Message(id: MessageId(peerId: PeerId(1), id: 1), timestamp: 1)])
                    throw Boom.boom
                }
                XCTFail("expected the error")
            } catch Boom.boom {}
            let (peer, count) = try await postbox.read { tx in (try tx.peers.get(PeerId(1)), try tx.messages.count(peer: PeerId(1))) }
            XCTAssertNil(peer, "the write-behind cache must not leak a rolled-back peer")
            XCTAssertEqual(count, 0)
        }
    }

    /// The write and its sync in one call: the body's result and no sync failure back, the rows
    /// committed; a body that throws rolls back and throws, as `transaction` does.
    func testTransactionThenSyncCommitsAndReturnsTheResult() async throws {
        try await forEachEngine { store in
            let postbox = try store.postbox()
            let (title, syncFailure) = try await postbox.transactionThenSync { tx -> String in
                try tx.peers.set(Peer(id: PeerId(2), category: .group, title: "kept"))
                return "kept"
            }
            XCTAssertEqual(title, "kept")
            XCTAssertNil(syncFailure)
            do {
                _ = try await postbox.transactionThenSync { tx in
                    try tx.peers.set(Peer(id: PeerId(3), category: .group, title: "dropped"))
                    throw Boom.boom
                }
                XCTFail("expected the error")
            } catch Boom.boom {}
            let (kept, dropped) = try await postbox.read { tx in (try tx.peers.get(PeerId(2)), try tx.peers.get(PeerId(3))) }
            XCTAssertEqual(kept?.title, "kept")
            XCTAssertNil(dropped)
        }
    }

    func testTransactionCannotBeUsedAfterCommit() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let escaped = try postbox.transactionSync { $0 }
            XCTAssertFalse(escaped.isActive)
            XCTAssertThrowsError(try escaped.peers.set(Peer(id: PeerId(1), category: .group, title: "late"))) {
                XCTAssertEqual($0 as? PostboxError, .transactionFinished)
            }
            let table = try postbox.transactionSync { try $0.peers }
            XCTAssertThrowsError(try table.get(PeerId(1)), "a table kept past its transaction refuses work")
        }
    }

    func testReadTransactionRefusesWrites() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            XCTAssertThrowsError(try postbox.readSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "x")) })
        }
    }

    func testWriteBehindReadsOwnWritesAndRecordsChanges() async throws {
        try await forEachEngine { store in
            let postbox = try store.postbox()
            let stream = postbox.changes()
            let changes = try await postbox.transaction { tx -> PostboxChanges in
                try tx.peers.set(Peer(id: PeerId(5), category: .group, title: "first"))
                try tx.peers.set(Peer(id: PeerId(5), category: .group, title: "second"))
                XCTAssertEqual(try tx.peers.get(PeerId(5))?.title, "second")
                try tx.messages.add([Message(id: MessageId(peerId: PeerId(5), id: 1), timestamp: 1)])
                return tx.changes
            }
            XCTAssertEqual(changes.updatedPeers, [PeerId(5)])
            XCTAssertEqual(changes.addedMessages, [PeerId(5): 1])
            var iterator = stream.makeAsyncIterator()
            let observed = await iterator.next()
            XCTAssertEqual(observed, changes, "observers receive the committed change record")
            XCTAssertEqual(try postbox.readSync { try $0.peers.get(PeerId(5))?.title }, "second")
        }
    }

    func testCachesNoticeAnotherConnectionsCommit() throws {
        try forEachEngine { store in
            let a = try store.postbox()
            let b = try store.postbox()
            try a.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "v1")) }
            XCTAssertEqual(try b.readSync { try $0.peers.get(PeerId(1))?.title }, "v1")
            try a.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "v2")) }
            XCTAssertEqual(try b.readSync { try $0.peers.get(PeerId(1))?.title }, "v2", "b's cached v1 must be dropped")
        }
    }

    func testWriteTransactionsNoticeAnotherConnectionsCommit() throws {
        try forEachEngine { store in
            let a = try store.postbox()
            let b = try store.postbox()
            try a.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "v1")) }
            // b caches v1 in a write transaction, and writes something of its own.
            XCTAssertEqual(
                try b.transactionSync { tx -> String? in
                    try tx.peers.set(Peer(id: PeerId(2), category: .group, title: "b"))
                    return try tx.peers.get(PeerId(1))?.title
                }, "v1")
            XCTAssertEqual(try b.transactionSync { try $0.peers.get(PeerId(1))?.title }, "v1", "its own commit keeps b's cache")
            try a.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "v2")) }
            XCTAssertEqual(try b.transactionSync { try $0.peers.get(PeerId(1))?.title }, "v2", "b's cached v1 must be dropped")
            XCTAssertEqual(try b.readSync { try $0.peers.get(PeerId(1))?.title }, "v2")
            try a.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "v3")) }
            XCTAssertEqual(try b.readSync { try $0.peers.get(PeerId(1))?.title }, "v3")
            XCTAssertEqual(try b.transactionSync { try $0.peers.get(PeerId(1))?.title }, "v3")
            XCTAssertEqual(try a.readSync { try $0.peers.get(PeerId(2))?.title }, "b")
        }
    }

    /// The open-item index holds exactly the queued and uploading items through every change of
    /// state and removal, `scanOpen` reads only those, and a store from before the index (schema
    /// 2) gets it built when it is opened.
    func testTheUploadQueuesOpenItemIndexFollowsTheItemsAndIsBuiltForAnOlderStore() throws {
        func item(_ id: Int64, _ state: UploadItem.State) -> UploadItem {
            var item = UploadItem(id: id, peerId: PeerId(1), stagedPath: "/x/\(id)", originalName: "x", size: 10, sha256: "ab", randomId: id, enqueuedAt: 1)
            item.state = state
            return item
        }
        func open(_ postbox: Postbox) throws -> [Int64] {
            try postbox.readSync { tx in
                var ids: [Int64] = []
                try tx.uploadQueue.scanOpen {
                    ids.append($0.id)
                    return true
                }
                return ids
            }
        }
        let states: [UploadItem.State] = [.sent, .queued, .failed, .uploading, .sent, .queued]
        try forEachEngine { store in
            let postbox = try store.postbox()
            try postbox.transactionSync { tx in
                for (i, state) in states.enumerated() { try tx.uploadQueue.set(item(Int64(i + 1), state)) }
            }
            XCTAssertEqual(try open(postbox), [2, 4, 6])
            try postbox.transactionSync { tx in
                try tx.uploadQueue.set(item(2, .sent))
                try tx.uploadQueue.set(item(3, .queued))  // a failed item queued again
                try tx.uploadQueue.remove(6)
            }
            XCTAssertEqual(try open(postbox), [3, 4])
            let firstOnly = try postbox.readSync { tx -> [Int64] in
                var ids: [Int64] = []
                try tx.uploadQueue.scanOpen {
                    ids.append($0.id)
                    return false
                }
                return ids
            }
            XCTAssertEqual(firstOnly, [3], "returning false stops the scan")

            // A store of schema 2: items written, no index.
            let older = store.sibling()
            try older.postbox().transactionSync { tx in
                for (i, state) in states.enumerated() { try tx.uploadQueue.set(item(Int64(i + 1), state)) }
                try tx.uploadQueue.valueBox.removeAll(PostboxTableId.uploadQueueOpen.table)
                try tx.metadata.setSchemaVersion(2)
            }
            XCTAssertEqual(try open(older.postbox(readOnly: true)), [], "before its migration, nothing is indexed")
            let migrated = try older.postbox()
            XCTAssertEqual(try migrated.readSync { try $0.metadata.schemaVersion() }, Postbox.schemaVersion)
            XCTAssertEqual(try open(migrated), [2, 4, 6])
        }
    }

    func testSchemaVersionAndMigrationHook() throws {
        try forEachEngine { store in
            let path = store.identity
            _ = try store.postbox()
            XCTAssertEqual(try store.postbox().readSync { try $0.metadata.schemaVersion() }, Postbox.schemaVersion)

            // A store written by a newer jobrun: refuse to write it.
            let newer = try store.postbox()
            try newer.transactionSync { try $0.metadata.setSchemaVersion(Postbox.schemaVersion + 1) }
            XCTAssertThrowsError(try store.postbox()) {
                XCTAssertEqual($0 as? PostboxError, .schemaTooNew(path: path, found: Postbox.schemaVersion + 1, supported: Postbox.schemaVersion))
            }
            XCTAssertNoThrow(try store.postbox(readOnly: true), "reading a newer store is still allowed")

            // An older store: migrations run once, in order, under the write lock.
            let old = store.sibling()
            let seed = try old.postbox()
            try seed.transactionSync { try $0.metadata.setSchemaVersion(0) }
            let ran = Counter()
            let migration = PostboxMigration(toVersion: 1) { tx in
                ran.increment()
                try tx.peers.set(Peer(id: PeerId(77), category: .contact, title: "migrated"))
            }
            let migrated = try old.postbox(migrations: [migration])
            XCTAssertEqual(try migrated.readSync { try $0.peers.get(PeerId(77))?.title }, "migrated")
            _ = try old.postbox(migrations: [migration])
            XCTAssertEqual(ran.value, 1)
        }
    }

    func testDomainTables() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let peer = PeerId(3)
            try postbox.transactionSync { tx in
                try tx.messages.add((1...20).map { Message(id: MessageId(peerId: peer, id: Int32($0)), timestamp: Int32(1000 + $0 * 10)) })
                try tx.syncStates.set(peer, PeerSyncState(maxSyncedId: 20, lastSyncAt: 5, totalFetched: 20))
                try tx.holes.add(peer: peer, range: 30...40)
                try tx.holes.add(peer: peer, range: 41...50)
                try tx.holes.fill(peer: peer, range: 35...36)
            }
            try postbox.readSync { tx in
                var newest: [Int32] = []
                try tx.messages.scan(peer: peer, since: 1150, limit: 3) {
                    newest.append($0.id.id); return true
                }
                XCTAssertEqual(newest, [20, 19, 18])
                var oldest: [Int32] = []
                try tx.messages.scan(peer: peer, newestFirst: false, since: 1150) {
                    oldest.append($0.id.id); return true
                }
                XCTAssertEqual(oldest, Array(15...20))
                XCTAssertEqual(try tx.messages.maxId(peer: peer), 20)
                XCTAssertEqual(try tx.syncStates.get(peer)?.maxSyncedId, 20)
                XCTAssertEqual(try tx.holes.holes(peer: peer), [30...34, 37...50])
            }
            // A timestamp change moves the message; removal clears the id index.
            try postbox.transactionSync { tx in
                try tx.messages.add([Message(id: MessageId(peerId: peer, id: 1), timestamp: 5000, text: "edited")])
                try tx.messages.remove(MessageId(peerId: peer, id: 2))
            }
            try postbox.readSync { tx in
                XCTAssertEqual(try tx.messages.count(peer: peer), 19)
                var first: Message?
                try tx.messages.scan(peer: peer, limit: 1) {
                    first = $0; return false
                }
                XCTAssertEqual(first?.text, "edited")
                XCTAssertNil(try tx.messages.get(MessageId(peerId: peer, id: 2)))
            }
        }
    }

    func testBatchedReadsOfMessagesReferencesAndLeases() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let peer = PeerId(5)
            let parent = MediaParent.message(MessageId(peerId: peer, id: 1))
            try postbox.transactionSync { tx in
                try tx.messages.add([
                    Message(id: MessageId(peerId: peer, id: 1), timestamp: 100, text: "one", media: [TestPhoto(id: 10, resourceIds: ["r1"])]),
                    Message(id: MessageId(peerId: peer, id: 2), timestamp: 200, text: "two"),
                ])
                try tx.mediaReferences.set(MediaReferenceRecord(resourceId: "r1", parent: parent, fileReference: Data([1]), obtainedAt: 10))
                _ = try tx.revalidationLeases.acquire(parent, holder: "h", nowMs: 1000, durationMs: 500)
            }
            try postbox.transactionSync { tx in
                XCTAssertEqual(
                    try tx.messages.timestamps(of: [MessageId(peerId: peer, id: 2), MessageId(peerId: peer, id: 3)]), [MessageId(peerId: peer, id: 2): 200])
                // Only stored messages are replaced; a message given twice ends as its last copy,
                // and its first copy's media leaves the media index.
                try tx.messages.replaceStored([
                    Message(id: MessageId(peerId: peer, id: 1), timestamp: 100, text: "first", media: [TestPhoto(id: 11, resourceIds: ["r1"])]),
                    Message(id: MessageId(peerId: peer, id: 3), timestamp: 300, text: "never stored"),
                    Message(id: MessageId(peerId: peer, id: 1), timestamp: 100, text: "second", media: [TestPhoto(id: 12, resourceIds: ["r1"])]),
                ])
                let records = try tx.mediaReferences.get(["r1", "nothing"])
                XCTAssertEqual(Array(records.keys), ["r1"])
                var record = try XCTUnwrap(records["r1"])
                record.obtainedAt = 20
                try tx.mediaReferences.set(record, replacing: records["r1"])
                let leases = try tx.revalidationLeases.get([parent, .peerAvatar(peer)])
                XCTAssertEqual(leases.count, 1)
                XCTAssertEqual(leases[parent]?.holder, "h")
                let taken = try tx.revalidationLeases.acquire(parent, current: leases[parent], holder: "other", nowMs: 1200, durationMs: 500)
                XCTAssertEqual(taken.holder, "h", "an unexpired lease stays its holder's")
                XCTAssertEqual(
                    try tx.revalidationLeases.acquire(parent, current: leases[parent], holder: "other", nowMs: 1600, durationMs: 500).holder, "other")
            }
            try postbox.readSync { tx in
                XCTAssertEqual(try tx.messages.get(MessageId(peerId: peer, id: 1))?.text, "second")
                XCTAssertNil(try tx.messages.get(MessageId(peerId: peer, id: 3)))
                XCTAssertEqual(try tx.messages.count(peer: peer), 2)
                XCTAssertEqual(try tx.messages.messages(withMedia: MediaId(namespace: 1, id: 12)), [MessageId(peerId: peer, id: 1)])
                XCTAssertEqual(try tx.messages.messages(withMedia: MediaId(namespace: 1, id: 10)), [])
                XCTAssertEqual(try tx.messages.messages(withMedia: MediaId(namespace: 1, id: 11)), [])
                var old: [String] = []
                try tx.mediaReferences.obtained(before: 15) {
                    old.append($0.resourceId); return true
                }
                XCTAssertEqual(old, [], "the replaced record left its old place in the time index")
                XCTAssertEqual(try tx.mediaReferences.resources(of: parent), ["r1"])
                XCTAssertEqual(try tx.revalidationLeases.get(parent)?.holder, "other")
            }
        }
    }

    func testReferencesObtainedBeforeACutoffComeInTimeOrderAcrossReadChunksAndStopWhenAsked() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let count = 600
            try postbox.transactionSync { tx in
                for i in (0..<count).reversed() {
                    try tx.mediaReferences.set(
                        MediaReferenceRecord(resourceId: "r\(i)", parent: .wallpaper(id: Int64(i)), fileReference: Data([1]), obtainedAt: Int64(1000 + i)))
                }
            }
            try postbox.readSync { tx in
                var all: [Int64] = []
                try tx.mediaReferences.obtained(before: 1000 + 550) {
                    all.append($0.obtainedAt); return true
                }
                XCTAssertEqual(all, (0..<550).map { Int64(1000 + $0) })
                var first: [String] = []
                try tx.mediaReferences.obtained(before: .max) {
                    first.append($0.resourceId); return first.count < 300
                }
                XCTAssertEqual(first, (0..<300).map { "r\($0)" }, "stops at the record that said so, past the first chunk")
                var limited = 0
                try tx.mediaReferences.obtained(before: .max, limit: 10) { _ in
                    limited += 1; return true
                }
                XCTAssertEqual(limited, 10)
            }
        }
    }

    func testMediaReferenceIndexes() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let message = MediaParent.message(MessageId(peerId: PeerId(1), id: 7))
            try postbox.transactionSync { tx in
                for i in 0..<5 {
                    try tx.mediaReferences.set(MediaReferenceRecord(resourceId: "m\(i)", parent: message, fileReference: Data([1]), obtainedAt: Int64(100 + i)))
                }
                try tx.mediaReferences.set(MediaReferenceRecord(resourceId: "avatar", parent: .peerAvatar(PeerId(1)), fileReference: Data([2]), obtainedAt: 50))
                // Refreshing moves the record in the time index.
                try tx.mediaReferences.set(MediaReferenceRecord(resourceId: "m0", parent: message, fileReference: Data([3]), obtainedAt: 500))
            }
            try postbox.readSync { tx in
                XCTAssertEqual(Set(try tx.mediaReferences.resources(of: message)), ["m0", "m1", "m2", "m3", "m4"])
                XCTAssertEqual(try tx.mediaReferences.resources(of: .peerAvatar(PeerId(1))), ["avatar"])
                let together = try tx.mediaReferences.resources(of: [message, .peerAvatar(PeerId(1)), .peerAvatar(PeerId(2))])
                XCTAssertEqual(
                    together.mapValues(Set.init), [message: ["m0", "m1", "m2", "m3", "m4"], .peerAvatar(PeerId(1)): ["avatar"], .peerAvatar(PeerId(2)): []])
                var old: [String] = []
                try tx.mediaReferences.obtained(before: 104) {
                    old.append($0.resourceId); return true
                }
                XCTAssertEqual(old, ["avatar", "m1", "m2", "m3"])
            }
            for parent in [message, .peerAvatar(PeerId(-4)), .stickerSet(id: 9), .wallpaper(id: -1), .story(peerId: PeerId(8), id: 3)] {
                XCTAssertEqual(MediaParent(key: parent.key), parent)
            }
        }
    }

    func testUploadQueueAndJobRuns() throws {
        try forEachEngine { store in
            let postbox = try store.postbox()
            let id = try postbox.transactionSync { tx -> Int64 in
                let id = try tx.uploadQueue.nextItemId()
                var item = UploadItem(id: id, peerId: PeerId(1), stagedPath: "/x", originalName: "x", size: 10, sha256: "ab", randomId: 99, enqueuedAt: 1)
                item.mimeType = "image/png"
                try tx.uploadQueue.set(item)
                for p in [0, 1, 2, 4] as [Int32] { try tx.uploadQueue.acknowledge(item: id, part: p) }
                for i in 0..<5 {
                    var run = JobRunRecord(runId: "r\(i)", job: i < 3 ? "sync" : "cleanup", kind: "k", startedAt: Int64(i), pid: 1)
                    run.outcome = .succeeded
                    run.counters = ["files": Int64(i)]
                    try tx.jobRuns.set(run)
                }
                return id
            }
            try postbox.readSync { tx in
                XCTAssertEqual(try tx.uploadQueue.get(id)?.mimeType, "image/png")
                XCTAssertEqual(try tx.uploadQueue.acknowledgedParts(item: id), [0, 1, 2, 4])
                XCTAssertEqual(try tx.uploadQueue.committedPartCount(item: id), 3)
                XCTAssertEqual(try tx.jobRuns.recent(job: "sync", limit: 2).map(\.runId), ["r2", "r1"])
                XCTAssertEqual(try tx.jobRuns.jobNames(), ["cleanup", "sync"])
                XCTAssertEqual(try tx.jobRuns.recent(job: "cleanup", limit: 5).first?.counters["files"], 4)
            }
            try postbox.transactionSync { tx in
                try tx.jobRuns.prune(job: "sync", keep: 1)
                try tx.uploadQueue.resetParts(item: id)
            }
            try postbox.readSync { tx in
                XCTAssertEqual(try tx.jobRuns.recent(job: "sync", limit: 10).map(\.runId), ["r2"])
                XCTAssertEqual(try tx.jobRuns.recent(job: "cleanup", limit: 10).map(\.runId), ["r4", "r3"], "another job's runs are kept")
                XCTAssertEqual(try tx.uploadQueue.acknowledgedParts(item: id), [])
            }
            try postbox.transactionSync { tx in
                try tx.jobRuns.prune(job: "cleanup", keep: 5)
                XCTAssertEqual(try tx.jobRuns.recent(job: "cleanup", limit: 10).map(\.runId), ["r4", "r3"], "a history within the limit is left alone")
                try tx.jobRuns.prune(job: "cleanup", keep: 0)
                XCTAssertEqual(try tx.jobRuns.recent(job: "cleanup", limit: 10).map(\.runId), [])
                XCTAssertEqual(try tx.jobRuns.recent(job: "sync", limit: 10).map(\.runId), ["r2"])
            }
        }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func increment() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
