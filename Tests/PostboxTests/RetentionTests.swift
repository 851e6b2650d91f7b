import Foundation
import Postbox
import TestSupport
import XCTest

/// History retention on real SQLite files: size, age and count limits, what always stays, holes,
/// references, uploads, dry runs, and the space given back.
final class RetentionTests: XCTestCase {
    override func setUp() { PostboxTypeRegistry.register(TestPhoto.self) }

    /// 100,000 messages over 1,000 peers, a limit at 40% of the file: one run ends under it,
    /// oldest first across peers, the newest N of every peer kept, every removed range a
    /// trimmed hole, no dangling reference, integrity ok.
    func testSizeLimitTrimsOldestAcrossPeersAndEndsUnderIt() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        let peers = 1000, perPeer = 100, keep = 10
        try RetentionFixture.fill(postbox, peers: peers, perPeer: perPeer)
        _ = try postbox.checkpointWAL(truncate: true)
        let before = try postbox.databaseBytes()
        let limit = before * 4 / 10

        var policy = RetentionFixture.policy()
        policy.sizeLimit = limit
        policy.keepNewest = keep
        policy.batchSize = 500
        policy.vacuumStepBytes = 1 << 20
        let report = try HistoryRetention(postbox: postbox, policy: policy).run()

        XCTAssertTrue(report.underLimit, "\(report.databaseBytesAfter) > \(limit)")
        XCTAssertLessThanOrEqual(try postbox.databaseBytes(), limit)
        XCTAssertLessThanOrEqual(postbox.fileSize(), limit, "file + WAL under the limit after the final checkpoint")
        XCTAssertGreaterThan(report.databaseBytesAfter, limit / 2, "trimmed to the limit, not far below it: \(report.databaseBytesAfter)")
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])
        XCTAssertEqual(try postbox.freePageCount(), 0, "every free page returned")

        var remaining = 0
        var evenRemaining = 0
        var newestRemovedTs: Int32 = .min
        var oldestUnprotectedTs: Int32 = .max
        for p in 0..<peers {
            let peer = RetentionFixture.peerId(p)
            let ids = try RetentionFixture.ids(postbox, peer)
            remaining += ids.count
            evenRemaining += ids.filter { $0 % 2 == 0 }.count
            XCTAssertGreaterThanOrEqual(ids.count, keep)
            XCTAssertEqual(Array(ids.suffix(keep)), Array(Int32(perPeer - keep + 1)...Int32(perPeer)), "peer \(p) keeps its newest \(keep)")
            // Removed: a prefix of ids, exactly one trimmed hole.
            let first = ids.first!
            XCTAssertEqual(ids, Array(first...Int32(perPeer)))
            let holes = try postbox.readSync { try $0.holes.entries(peer: peer) }
            if first > 1 {
                XCTAssertEqual(holes, [HistoryHole(1...(first - 1), kind: .trimmed)], "peer \(p)")
                newestRemovedTs = max(newestRemovedTs, RetentionFixture.timestamp(peer: p, message: Int(first - 1)))
            } else {
                XCTAssertEqual(holes, [])
            }
            if ids.count > keep { oldestUnprotectedTs = min(oldestUnprotectedTs, RetentionFixture.timestamp(peer: p, message: Int(first))) }
        }
        XCTAssertLessThan(newestRemovedTs, oldestUnprotectedTs, "oldest first across peers")
        XCTAssertEqual(report.messagesRemoved, peers * perPeer - remaining)
        XCTAssertEqual(report.byPeer.reduce(0) { $0 + $1.messages }, report.messagesRemoved)
        XCTAssertEqual(report.referencesRemoved, report.byPeer.reduce(0) { $0 + $1.references })
        let references = try postbox.readSync { try $0.mediaReferences.count() }
        XCTAssertEqual(references, evenRemaining, "one reference per remaining even message")
        XCTAssertGreaterThan(report.referencesRemoved, 0)

        // A second run finds nothing more to do.
        let again = try HistoryRetention(postbox: postbox, policy: policy).run()
        XCTAssertEqual(again.messagesRemoved, 0)
    }

    /// Age and count limits, exclusions by peer and category, keepNewest over age, and a dry
    /// run that lists exactly what the real run then removes while changing nothing.
    func testAgeCountExclusionsAndDryRun() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        try RetentionFixture.fill(postbox, peers: 30, perPeer: 60)
        let now = Int64(RetentionFixture.timestamp(peer: 0, message: 40))  // messages 1…39 are older than 0 s
        var policy = RetentionFixture.policy()
        policy.now = now
        policy.maxAge = 0
        policy.maxMessagesPerPeer = 50
        policy.keepNewest = 25
        policy.excludedPeers = [RetentionFixture.peerId(0)]
        policy.excludedCategories = [.channel]  // peers 2, 5, 8, …

        var dry = policy
        dry.dryRun = true
        let hashBefore = try Data(contentsOf: URL(fileURLWithPath: dir.file("db.sqlite")))
        let preview = try HistoryRetention(postbox: postbox, policy: dry).run()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir.file("db.sqlite"))), hashBefore, "a dry run writes nothing")
        XCTAssertEqual(try RetentionFixture.ids(postbox, RetentionFixture.peerId(1)).count, 60)

        let report = try HistoryRetention(postbox: postbox, policy: policy).run()
        XCTAssertEqual(report.peersExcluded, 1 + 10)
        for p in 0..<30 {
            let ids = try RetentionFixture.ids(postbox, RetentionFixture.peerId(p))
            if p == 0 || p % 3 == 2 {
                XCTAssertEqual(ids.count, 60, "excluded peer \(p) untouched")
            } else {
                // Age drops 1…39 (or a little more for later peers), but keepNewest 25 keeps 36…60.
                XCTAssertEqual(ids, Array(36...60), "peer \(p)")
            }
        }
        XCTAssertEqual(preview.messagesRemoved, report.messagesRemoved, "the dry run predicted the real run")
        XCTAssertEqual(Set(preview.byPeer.map(\.peer)), Set(report.byPeer.map(\.peer)))
        XCTAssertEqual(preview.byPeer.first { $0.peer == RetentionFixture.peerId(1) }?.reasons, [.age])
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])

        // Count alone, with a smaller keep: beyond the newest 30 goes.
        // Count alone, with a smaller keep: beyond the newest 30 goes (peers trimmed to 25 above keep theirs).
        var count = RetentionFixture.policy()
        count.maxMessagesPerPeer = 30
        count.keepNewest = 5
        let second = try HistoryRetention(postbox: postbox, policy: count).run()
        XCTAssertEqual(try RetentionFixture.ids(postbox, RetentionFixture.peerId(1)), Array(36...60))
        XCTAssertEqual(try RetentionFixture.ids(postbox, RetentionFixture.peerId(0)), Array(31...60))
        XCTAssertEqual(try RetentionFixture.ids(postbox, RetentionFixture.peerId(2)), Array(31...60))
        XCTAssertEqual(second.byPeer.first { $0.peer == RetentionFixture.peerId(0) }?.reasons, [.count])
        XCTAssertEqual(second.messagesRemoved, 11 * 30)
        XCTAssertEqual(try postbox.readSync { try $0.holes.entries(peer: RetentionFixture.peerId(0)) }, [HistoryHole(1...30, kind: .trimmed)])
        XCTAssertEqual(try postbox.readSync { try $0.holes.entries(peer: RetentionFixture.peerId(1)) }, [HistoryHole(1...35, kind: .trimmed)])
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
    }

    /// A message the predicate calls in use stays, with its reference; the holes split around
    /// it; the next run, once it is free, removes it and the holes merge.
    func testInUseMessagesStayAndHolesSplitAroundThem() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        try RetentionFixture.fill(postbox, peers: 2, perPeer: 40)
        let peer = RetentionFixture.peerId(0)
        var policy = RetentionFixture.policy()
        policy.maxMessagesPerPeer = 10
        policy.keepNewest = 10
        policy.batchSize = 7  // several transactions, the in-use message in the middle of one
        let busy = MessageId(peerId: peer, id: 12)
        let report = try HistoryRetention(postbox: postbox, policy: policy, inUse: { $0.id == busy }).run()
        XCTAssertEqual(report.keptInUse, 1)
        XCTAssertEqual(try RetentionFixture.ids(postbox, peer), [12] + Array(31...40))
        XCTAssertEqual(
            try postbox.readSync { try $0.holes.entries(peer: peer) },
            [HistoryHole(1...11, kind: .trimmed), HistoryHole(13...30, kind: .trimmed)])
        XCTAssertNotNil(try postbox.readSync { try $0.mediaReferences.get("photo-0-12") }, "the busy message keeps its reference")
        XCTAssertNil(try postbox.readSync { try $0.mediaReferences.get("photo-0-14") })
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])

        let later = try HistoryRetention(postbox: postbox, policy: policy).run()
        XCTAssertEqual(later.messagesRemoved, 1)
        XCTAssertEqual(try postbox.readSync { try $0.holes.entries(peer: peer) }, [HistoryHole(1...30, kind: .trimmed)])
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])
    }

    /// A sticker sent in many messages has one reference record, held by the oldest message
    /// that synced it: trimming that message moves the record to a message still stored with the
    /// same media, so revalidation can refresh it; once no stored message uses the file, it goes.
    func testAReferenceOutlivesItsHolderWhileAnyStoredMessageUsesTheFile() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        let peer = RetentionFixture.peerId(0)
        let other = RetentionFixture.peerId(1)
        let sticker = TestPhoto(id: 77, resourceIds: ["sticker-77"])
        try postbox.transactionSync { tx in
            try tx.peers.set(Peer(id: peer, category: .privateChat, title: "a"))
            try tx.peers.set(Peer(id: other, category: .group, title: "b"))
            var batch: [Message] = []
            for i in 1...30 {
                let media: [any Media] = i % 5 == 0 || i == 1 ? [sticker] : []
                batch.append(
                    Message(id: MessageId(peerId: peer, id: Int32(i)), timestamp: RetentionFixture.timestamp(peer: 0, message: i), text: "m", media: media))
            }
            batch.append(Message(id: MessageId(peerId: other, id: 1), timestamp: RetentionFixture.timestamp(peer: 1, message: 40), text: "m", media: [sticker]))
            try tx.messages.add(batch)
            // Synced newest first: the oldest message using the sticker holds its record.
            try tx.mediaReferences.set(
                MediaReferenceRecord(
                    resourceId: "sticker-77", parent: .message(MessageId(peerId: peer, id: 1)), fileReference: Data([1, 2, 3]),
                    obtainedAt: 1_700_000_000, media: sticker.id))
        }
        var policy = RetentionFixture.policy()
        policy.maxMessagesPerPeer = 10
        policy.keepNewest = 10
        policy.batchSize = 4
        let report = try HistoryRetention(postbox: postbox, policy: policy).run()
        XCTAssertEqual(try RetentionFixture.ids(postbox, peer), Array(21...30))
        let record = try XCTUnwrap(try postbox.readSync { try $0.mediaReferences.get("sticker-77") }, "kept: stored messages still use the file")
        XCTAssertEqual(record.fileReference, Data([1, 2, 3]))
        XCTAssertEqual(record.obtainedAt, 1_700_000_000, "still found by the expiry scan at the same time")
        guard case .message(let holder) = record.parent else { return XCTFail("\(record.parent)") }
        XCTAssertNotNil(try postbox.readSync { try $0.messages.get(holder) }, "held by a stored message")
        XCTAssertEqual(try postbox.readSync { try $0.mediaReferences.resources(of: .message(holder)) }, ["sticker-77"])
        XCTAssertEqual(report.referencesRemoved, 0)
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])

        // Every message with the sticker gone: the record goes too.
        try postbox.transactionSync { tx in
            for id in try tx.messages.messages(withMedia: sticker.id!) { try tx.messages.remove(id) }
            try tx.messages.add([
                Message(id: MessageId(peerId: peer, id: 31), timestamp: RetentionFixture.timestamp(peer: 0, message: 31), text: "m", media: [sticker])
            ])
        }
        try postbox.transactionSync { tx in
            var moved = try XCTUnwrap(try tx.mediaReferences.get("sticker-77"))
            moved.parent = .message(MessageId(peerId: peer, id: 31))
            try tx.mediaReferences.set(moved)
        }
        policy.maxMessagesPerPeer = 1
        policy.keepNewest = 0
        try postbox.transactionSync { tx in
            try tx.messages.add([
                Message(id: MessageId(peerId: peer, id: 32), timestamp: RetentionFixture.timestamp(peer: 0, message: 32), text: "m", media: [])
            ])
        }
        _ = try HistoryRetention(postbox: postbox, policy: policy).run()
        XCTAssertNil(try postbox.readSync { try $0.mediaReferences.get("sticker-77") }, "no stored message uses the file any more")
        XCTAssertEqual(try postbox.checkHistoryConsistency(), [])
    }

    /// Sent and failed items past the retention go with their parts; queued, uploading and
    /// recent ones stay.
    func testFinishedUploadItemsArePrunedWithTheirParts() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        let now: Int64 = 1_700_000_000
        let old = (now - 40 * 86_400) * 1000, recent = (now - 86_400) * 1000
        let cases: [(UploadItem.State, Int64)] = [(.sent, old), (.failed, old), (.queued, old), (.uploading, old), (.sent, recent)]
        try postbox.transactionSync { tx in
            for (i, (state, at)) in cases.enumerated() {
                var item = UploadItem(
                    id: Int64(i + 1), peerId: PeerId(1), stagedPath: "/x/\(i)", originalName: "f", size: 10, sha256: "", randomId: 1, enqueuedAt: at)
                item.state = state
                try tx.uploadQueue.set(item)
                for part in 0..<3 { try tx.uploadQueue.acknowledge(item: item.id, part: Int32(part)) }
            }
        }
        var policy = RetentionFixture.policy()
        policy.now = now
        policy.uploadRetention = 30 * 86_400
        let report = try HistoryRetention(postbox: postbox, policy: policy).run()
        XCTAssertEqual(report.uploadItemsPruned, 2)
        XCTAssertEqual(report.uploadPartsPruned, 6)
        XCTAssertEqual(Set(report.prunedStagedFiles), ["/x/0", "/x/1"])
        try postbox.readSync { tx in
            XCTAssertNil(try tx.uploadQueue.get(1))
            XCTAssertNil(try tx.uploadQueue.get(2))
            XCTAssertEqual(try tx.uploadQueue.acknowledgedParts(item: 1), [])
            for id in 3...5 { XCTAssertEqual(try tx.uploadQueue.acknowledgedParts(item: Int64(id)), [0, 1, 2]) }
        }
    }

    /// Holes keep their kinds through fills and merges; a hole written before kinds existed
    /// (four bytes) reads as a gap.
    func testHoleKindsSurviveFillsAndOldValuesReadAsGaps() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        let peer = PeerId(5)
        try postbox.transactionSync { tx in
            try tx.holes.add(peer: peer, range: 1...100, kind: .trimmed)
            try tx.holes.add(peer: peer, range: 150...200)
            try tx.holes.add(peer: peer, range: 101...120, kind: .trimmed)
            try tx.holes.fill(peer: peer, range: 50...60)
        }
        XCTAssertEqual(
            try postbox.readSync { try $0.holes.entries(peer: peer) },
            [HistoryHole(1...49, kind: .trimmed), HistoryHole(61...120, kind: .trimmed), HistoryHole(150...200, kind: .gap)])
        XCTAssertEqual(try postbox.readSync { try $0.holes.holes(peer: peer) }, [1...49, 61...120, 150...200])
        // A gap overlapping a trimmed range takes its part; same-kind neighbours merge.
        try postbox.transactionSync { try $0.holes.add(peer: peer, range: 110...149) }
        XCTAssertEqual(
            try postbox.readSync { try $0.holes.entries(peer: peer) },
            [HistoryHole(1...49, kind: .trimmed), HistoryHole(61...109, kind: .trimmed), HistoryHole(110...200, kind: .gap)])
    }

    /// The usage report adds up: dbstat tables cover the file, peers are listed largest first,
    /// and retention's returned space shows as a smaller file with no free pages.
    func testDatabaseUsageReportsTablesPeersAndFreePages() throws {
        let dir = TemporaryDirectory()
        let postbox = try Postbox(path: dir.file("db.sqlite"), key: TestRoot.storeKey)
        try RetentionFixture.fill(postbox, peers: 20, perPeer: 200)
        try RetentionFixture.fill(postbox, peers: 1, perPeer: 1000, firstPeer: 50)
        _ = try postbox.checkpointWAL(truncate: true)
        let usage = try postbox.databaseUsage()
        XCTAssertEqual(usage.source, .dbstat)
        // Every page in use belongs to a table, but for auto-vacuum's pointer-map pages (one per ~800).
        let tablePages = usage.tables.reduce(0) { $0 + $1.pages }
        XCTAssertLessThanOrEqual(tablePages, usage.pageCount - usage.freePages)
        XCTAssertGreaterThanOrEqual(tablePages, (usage.pageCount - usage.freePages) * 99 / 100)
        XCTAssertEqual(usage.fileBytes, usage.pageCount * usage.pageSize)
        let messages = try XCTUnwrap(usage.tables.first { $0.name == "messages" })
        XCTAssertEqual(messages.rows, 20 * 200 + 1000)
        XCTAssertEqual(usage.tables.first?.name, "messages", "the largest table first")
        XCTAssertEqual(usage.peers.first?.peer, RetentionFixture.peerId(50))
        XCTAssertEqual(usage.peers.first?.messages, 1000)
        XCTAssertEqual(usage.peers.count, 21)

        var policy = RetentionFixture.policy()
        policy.maxMessagesPerPeer = 20
        policy.keepNewest = 20
        let report = try HistoryRetention(postbox: postbox, policy: policy).run()
        let after = try postbox.databaseUsage()
        XCTAssertEqual(after.freePages, 0)
        XCTAssertLessThan(after.fileBytes, usage.fileBytes / 3)
        XCTAssertEqual(report.databaseBytesBefore - report.databaseBytesAfter, usage.fileBytes - after.fileBytes)
        XCTAssertEqual(after.walBytes, 0, "the WAL is truncated at the end of a run")
    }
}
