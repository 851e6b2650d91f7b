import CloudCore
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// `RevalidationContext` against a real in-process cloudd, a real Postbox file and a real
/// MediaBox: one call per parent however many resources wait, message parents batched per
/// peer, bounded failures with backoff, gone parents, every parent kind, and the cross-process
/// lease (two Postbox instances on one file, as two processes).
final class RevalidationTests: XCTestCase {
    /// A fetch fixture plus a client, a Postbox and a revalidation context over them.
    final class Fixture: @unchecked Sendable {
        let fx: FetchFixture
        let client: CloudClient
        let postbox: Postbox

        init(_ configure: (inout CloudServerConfig) -> Void = { _ in }) async throws {
            fx = try await FetchFixture.start(configure)
            var config = CloudAccountConfig(datacenters: fx.datacenters, mainDc: 1, requestTimeout: 10)
            config.retry = CloudRetryPolicy(maxAttempts: 2, baseDelay: 0.02, maxDelay: 0.05, jitter: 0, maxFloodWait: 5, maxFloodWaits: 2)
            client = try CloudClient(config: config, transport: fx.transport)
            postbox = try Postbox(directory: fx.directory.file("db"), key: TestRoot.storeKey)
        }

        func context(
            holder: String = "test-\(UUID().uuidString.prefix(6))", postbox: Postbox? = nil,
            _ tweak: (inout RevalidationOptions) -> Void = { _ in }
        ) -> RevalidationContext {
            var o = RevalidationOptions(holder: holder)
            o.requestTimeout = 5
            o.backoffBase = 0.2
            o.backoffMax = 1
            tweak(&o)
            return RevalidationContext(client: client, postbox: postbox ?? self.postbox, options: o)
        }

        func counters() -> CountersResponse { fx.server.counters() }

        /// The bundle message (`bundleSize` documents) as the server gives it now.
        func bundle() async throws -> (CloudProtocol.Message, ParentEntity) {
            let key = try XCTUnwrap(fx.server.dataset().bundleMessage)
            let parent = try XCTUnwrap(ParentEntity(key: key))
            guard case let .message(peer, id) = parent else { throw FixtureMissing("bundle is not a message") }
            let m = try unwrap(try await client.getMessages(peerId: peer, ids: [id]).messages.first)
            return (m, parent)
        }

        /// Writes the reference records of `messages` as sync would, obtained `age` seconds ago.
        func store(_ messages: [CloudProtocol.Message], age: Int64) async throws {
            let at = Int64(Date().timeIntervalSince1970) - age
            let stored = messages.map { CloudMediaConversion.message($0, obtainedAt: at) }
            try await postbox.transaction { tx in
                try tx.messages.add(stored)
                for m in stored { for r in CloudMediaConversion.referenceRecords(of: m) { try tx.mediaReferences.set(r) } }
            }
        }
    }

    static func fileId(_ r: any CloudFetchableResource) -> Int64 {
        if case let .cloud(location, _, _) = r.fetchSource { return location.id }
        return -1
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    static func location(_ r: any CloudFetchableResource) -> FileLocation? {
        if case let .cloud(location, _, _) = r.fetchSource { return location }
        return nil
    }

    // MARK: 1. A hundred resources of one message

    func testHundredResourcesOfOneMessageShareOneCall() async throws {
        let f = try await Fixture {
            $0.dataset.bundleSize = 100; $0.dataset.peers = 3; $0.dataset.messagesPerPeer = 3
        }
        addTeardownBlock { await f.fx.stop() }
        let (message, parent) = try await f.bundle()
        let resources = CloudResources.resources(of: message)
        XCTAssertEqual(resources.count, 100)
        let context = f.context()
        let box = try f.fx.mediaBox(fetcher: f.fx.fetcher(revalidator: context))

        f.fx.server.expireReferences(parent: parent)
        f.fx.server.resetCounters()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for r in resources {
                group.addTask { try await f.fx.fetchAndCheck(box, r, fileId: Self.fileId(r)) }
            }
            try await group.waitForAll()
        }
        let counters = f.counters()
        XCTAssertEqual(counters.parents[parent.key], 1, "one revalidation for the 100 resources: \(counters.parents)")
        XCTAssertEqual(counters.methods[CloudMethod.getMessages.rawValue], 1)
        XCTAssertGreaterThanOrEqual(counters.errors["FILE_REFERENCE_EXPIRED"] ?? 0, 100)
        // The fresh references are in Postbox for other processes.
        let records = try await f.postbox.read { tx in try resources.map { try tx.mediaReferences.get($0.id.stringRepresentation) } }
        XCTAssertEqual(records.compactMap { $0 }.filter { $0.status == .valid }.count, 100)
        let stats = await context.stats
        XCTAssertEqual(stats.totalCalls, 1)
    }

    // MARK: 2. A thousand references over ten peers

    func testThousandReferencesOverTenPeersBatchPerPeer() async throws {
        let f = try await Fixture {
            $0.dataset.peers = 10; $0.dataset.messagesPerPeer = 250; $0.dataset.maxMediaSize = 200_000
        }
        addTeardownBlock { await f.fx.stop() }
        var messages: [CloudProtocol.Message] = []
        for d in try await f.client.getDialogs().dialogs {
            var offset: Int32 = 0
            while true {
                let page = try await f.client.getHistory(peerId: d.peer.id, offsetId: offset).messages
                messages += page
                guard let last = page.last, page.count == 100 else { break }
                offset = last.id
            }
        }
        try await f.store(messages, age: 7200)
        let total = try await f.postbox.read { try $0.mediaReferences.count() }
        XCTAssertGreaterThanOrEqual(total, 1000)
        f.fx.server.expireReferences()
        f.fx.server.resetCounters()

        let options = ReferenceRevalidationPass.Options(
            window: 3600, referenceTTL: 3600, parentKinds: [.message], batchSize: 100, requestRate: nil, concurrency: 4,
            maxParents: 100_000, requestTimeout: 30)
        let pass = ReferenceRevalidationPass(context: f.context(), postbox: f.postbox, options: options)
        let (selected, _) = try await pass.select()
        var perPeer: [PeerId: Int] = [:]
        for (p, _) in selected { if case .message(let id) = p { perPeer[id.peerId, default: 0] += 1 } }
        XCTAssertEqual(perPeer.count, 8, "secret chats hold no references: \(perPeer)")
        XCTAssertTrue(perPeer.values.contains { $0 > 100 }, "some peer needs more than one call: \(perPeer)")
        let report = try await pass.run()
        XCTAssertNil(report.cloudFailure)
        XCTAssertEqual(report.refreshed, selected.count)
        XCTAssertGreaterThanOrEqual(report.referencesRefreshed, 1000)
        let allowed = perPeer.values.reduce(0) { $0 + ($1 + 99) / 100 }
        let counters = f.counters()
        XCTAssertLessThanOrEqual(counters.methods[CloudMethod.getMessages.rawValue] ?? 0, allowed)
        XCTAssertEqual(report.calls, counters.methods[CloudMethod.getMessages.rawValue])
        XCTAssertTrue(counters.parents.values.allSatisfy { $0 == 1 }, "every parent once: \(counters.parents.values.max() ?? 0)")
        let stale = try await f.postbox.read { tx -> Int in
            var n = 0
            try tx.mediaReferences.obtained(before: Int64(Date().timeIntervalSince1970) - 3600) { _ in
                n += 1; return true
            }
            return n
        }
        XCTAssertEqual(stale, 0, "every reference refreshed")
    }

    /// Another process stored an outcome for every due parent after this pass chose them (its
    /// leases say refreshed, now): the pass reads those outcomes with one read per unit and
    /// takes no lease, so it never waits for the store's writer lock, and calls nobody.
    func testAPassReadsOutcomesAnotherProcessStoredWithoutTakingALease() async throws {
        let f = try await Fixture {
            $0.dataset.peers = 3; $0.dataset.messagesPerPeer = 20
        }
        addTeardownBlock { await f.fx.stop() }
        var messages: [CloudProtocol.Message] = []
        for d in try await f.client.getDialogs().dialogs { messages += try await f.client.getHistory(peerId: d.peer.id, offsetId: 0).messages }
        try await f.store(messages, age: 7200)
        let options = ReferenceRevalidationPass.Options(
            window: 3000, referenceTTL: 3600, parentKinds: [.message], batchSize: 4, requestRate: nil, concurrency: 2,
            maxParents: 100_000, requestTimeout: 30)
        let pass = ReferenceRevalidationPass(context: f.context(holder: "this-process"), postbox: f.postbox, options: options)
        let (selected, _) = try await pass.select()
        XCTAssertGreaterThan(selected.count, 8)
        let references = selected.reduce(0) { $0 + $1.1.count }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await f.postbox.transaction { tx in
            for (p, _) in selected {
                try tx.revalidationLeases.set(p, RevalidationLease(holder: "", leaseUntil: 0, lastOutcome: .refreshed, lastOutcomeAt: now, failures: 0))
            }
        }
        f.fx.server.resetCounters()

        let report = try await pass.run()
        XCTAssertNil(report.cloudFailure)
        XCTAssertEqual(report.calls, 0)
        XCTAssertEqual(f.counters().methods, [:], "nothing asked of the cloud")
        XCTAssertEqual(report.reusedFromOtherProcess, selected.count)
        XCTAssertEqual(report.refreshed, selected.count)
        XCTAssertEqual(report.referencesRefreshed, references, "each parent's stored references were read with its outcome")
        XCTAssertEqual(report.times.claim, 0, "no lease taken: no write transaction")
        XCTAssertEqual(report.times.reuse, 0)
        XCTAssertGreaterThan(report.times.look, 0)
        let holders = try await f.postbox.read { tx in try tx.revalidationLeases.get(selected.map(\.0)).values.map(\.holder) }
        XCTAssertEqual(Set(holders), [""], "no lease was taken")
    }

    // MARK: 3. Failures are bounded and retried with backoff

    func testFailingCloudFailsEveryWaiterWithinBoundThenRecovers() async throws {
        let f = try await Fixture {
            $0.dataset.bundleSize = 20; $0.dataset.peers = 3; $0.dataset.messagesPerPeer = 3
        }
        addTeardownBlock { await f.fx.stop() }
        let (message, parent) = try await f.bundle()
        let resources = CloudResources.resources(of: message)
        let bound = 2.0
        let context = f.context { $0.requestTimeout = bound }
        f.fx.server.expireReferences(parent: parent)
        f.fx.server.updateFaults(FaultConfig(latencyMs: 300, failRevalidation: true))

        let started = ContinuousClock.now
        let outcomes = await withTaskGroup(of: (any Error)?.self) { group -> [(any Error)?] in
            for r in resources {
                group.addTask {
                    do {
                        _ = try await context.revalidate(resourceId: r.id, location: Self.location(r)!, parent: MediaResourceReference(parent)); return nil
                    } catch { return error }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = Self.seconds(ContinuousClock.now - started)
        XCTAssertLessThan(elapsed, bound + 1.5, "every waiter answered within the bound")
        XCTAssertEqual(outcomes.count, resources.count)
        for e in outcomes {
            let error = try XCTUnwrap(e as? RevalidationError, "\(String(describing: e))")
            XCTAssertTrue(error.isCloudUnavailable, "\(error)")
            XCTAssertFalse("\(error)".isEmpty)
        }
        // While backing off, a new waiter is answered at once without a call.
        let before = f.counters().methods[CloudMethod.getMessages.rawValue] ?? 0
        do {
            _ = try await context.revalidate(resourceId: resources[0].id, location: Self.location(resources[0])!, parent: MediaResourceReference(parent))
            XCTFail("still failing")
        } catch let e as RevalidationError {
            if case .backingOff = e {} else { XCTFail("expected backingOff, got \(e)") }
        }
        XCTAssertEqual(f.counters().methods[CloudMethod.getMessages.rawValue] ?? 0, before)
        let lease = try await f.postbox.read { tx in try tx.revalidationLeases.get(.message(MessageId(peerId: PeerId(message.peerId), id: message.id))) }
        XCTAssertEqual(lease?.lastOutcome, .failed)
        XCTAssertGreaterThanOrEqual(lease?.failures ?? 0, 1)
        XCTAssertNotNil(lease?.lastError)

        // Faults cleared, backoff elapsed: revalidation succeeds and downloads complete.
        f.fx.server.updateFaults(FaultConfig(latencyMs: 0, failRevalidation: false))
        try await Task.sleep(for: .seconds(1.2))
        let box = try f.fx.mediaBox(fetcher: f.fx.fetcher(revalidator: context))
        for r in resources.prefix(3) { try await f.fx.fetchAndCheck(box, r, fileId: Self.fileId(r)) }
    }

    // MARK: 4. Deleted message

    func testDeletedMessageMarksResourcesGoneAndIsNotAskedAgain() async throws {
        let f = try await Fixture {
            $0.dataset.bundleSize = 5; $0.dataset.peers = 3; $0.dataset.messagesPerPeer = 3
        }
        addTeardownBlock { await f.fx.stop() }
        let (message, parent) = try await f.bundle()
        try await f.store([message], age: 10)
        let resources = CloudResources.resources(of: message)
        let context = f.context()
        let box = try f.fx.mediaBox(fetcher: f.fx.fetcher(revalidator: context))
        XCTAssertTrue(f.fx.server.deleteMessages(peerId: message.peerId, ids: [message.id]))
        f.fx.server.expireReferences(parent: parent)
        f.fx.server.resetCounters()

        for r in resources {
            do {
                _ = try await box.fetch(r, info: MediaResourceStorageInfo())
                XCTFail("a deleted message's file cannot be fetched")
            } catch {
                XCTAssertTrue("\(error)".contains("gone"), "\(error)")
            }
        }
        XCTAssertEqual(f.counters().parents[parent.key], 1)
        let statuses = try await f.postbox.read { tx in try resources.map { try tx.mediaReferences.get($0.id.stringRepresentation)?.status } }
        XCTAssertEqual(statuses, Array(repeating: .gone, count: resources.count))

        // A second attempt, in a fresh context (no cache): no call for that parent.
        let again = try f.fx.mediaBox("again", fetcher: f.fx.fetcher(revalidator: f.context()))
        do {
            _ = try await again.fetch(resources[0], info: MediaResourceStorageInfo())
            XCTFail("still gone")
        } catch let e as RevalidationError {
            XCTAssertTrue(e.isGone, "\(e)")
            XCTAssertFalse("\(e)".contains(resources[0].id.stringRepresentation + "="))
        } catch {
            XCTAssertTrue("\(error)".contains("gone"), "\(error)")
        }
        XCTAssertEqual(f.counters().parents[parent.key], 1, "not asked again")
    }

    // MARK: 5. Every parent kind

    func testEveryParentKindRevalidatesEndToEnd() async throws {
        let f = try await Fixture {
            $0.dataset.peers = 5; $0.dataset.messagesPerPeer = 12; $0.dataset.stickerSets = 1; $0.dataset.wallpapers = 1
        }
        addTeardownBlock { await f.fx.stop() }
        let listing = f.fx.server.dataset()
        var cases: [(String, any CloudFetchableResource)] = []
        // Message.
        let messages = try await f.fx.allMessages()
        let withPhoto = try XCTUnwrap(messages.first { $0.media.contains { $0.photo != nil } })
        cases.append((ParentEntity.message(peerId: withPhoto.peerId, messageId: withPhoto.id).key, CloudResources.resources(of: withPhoto)[0]))
        // Avatar.
        let peer = try XCTUnwrap(listing.peers.first { $0.photo != nil })
        let avatar = try await f.client.getPeerPhoto(peerId: peer.id)
        cases.append(
            (ParentEntity.peerAvatar(peerId: peer.id).key, CloudPeerPhotoSizeMediaResource(peerId: peer.id, photo: try XCTUnwrap(avatar.photo), big: false)))
        // Sticker set: thumbnail and a sticker.
        let set = try await f.client.getStickerSet(id: try XCTUnwrap(listing.stickerSetIds.first))
        cases.append((ParentEntity.stickerSet(id: set.id).key, try XCTUnwrap(CloudStickerPackThumbnailMediaResource(stickerSet: set))))
        cases.append(
            (
                ParentEntity.stickerSet(id: set.id).key,
                CloudDocumentMediaResource(document: try XCTUnwrap(set.stickers.first), reference: .stickerPack(id: set.id))
            ))
        // Wallpaper.
        let wallpaper = try await f.client.getWallPaper(id: try XCTUnwrap(listing.wallpaperIds.first))
        cases.append((ParentEntity.wallpaper(id: wallpaper.id).key, CloudResources.resource(of: wallpaper)))
        // Story.
        let storyKey = try XCTUnwrap(listing.stories.first).split(separator: ":")
        let story = try await f.client.getStory(peerId: Int64(storyKey[0])!, id: Int32(storyKey[1])!)
        cases.append((ParentEntity.story(peerId: story.peerId, storyId: story.id).key, try XCTUnwrap(CloudResources.resources(of: story).first)))

        let context = f.context()
        let box = try f.fx.mediaBox(fetcher: f.fx.fetcher(revalidator: context))
        f.fx.server.expireReferences()
        f.fx.server.resetCounters()
        for (_, r) in cases { try await f.fx.fetchAndCheck(box, r, fileId: Self.fileId(r)) }
        let counters = f.counters()
        for key in Set(cases.map(\.0)) { XCTAssertEqual(counters.parents[key], 1, "\(key): \(counters.parents)") }
        for method in [CloudMethod.getMessages, .getPeerPhoto, .getStickerSet, .getWallPaper, .getStoryById] {
            XCTAssertEqual(counters.methods[method.rawValue], 1, "\(method)")
        }
        let keys = Set(cases.map(\.0))
        let leases = try await f.postbox.read { tx in
            try keys.map { try tx.revalidationLeases.get(MediaResourceReference(ParentEntity(key: $0)!).mediaParent!)?.lastOutcome }
        }
        XCTAssertEqual(leases, Array(repeating: .refreshed, count: leases.count))
    }

    // MARK: 6. Two processes, one Postbox file

    func testTwoContextsOverOnePostboxFileShareOneCall() async throws {
        let f = try await Fixture {
            $0.dataset.bundleSize = 10; $0.dataset.peers = 5; $0.dataset.messagesPerPeer = 12
        }
        addTeardownBlock { await f.fx.stop() }
        let (message, parent) = try await f.bundle()
        let resources = CloudResources.resources(of: message)
        // A second Postbox instance on the same file: what a second process opens.
        let other = try Postbox(directory: f.fx.directory.file("db"), key: TestRoot.storeKey)
        let a = f.context(holder: "process-a")
        let b = f.context(holder: "process-b", postbox: other)
        f.fx.server.expireReferences()
        f.fx.server.updateFaults(FaultConfig(latencyMs: 300))
        f.fx.server.resetCounters()

        let all = try await withThrowingTaskGroup(of: FileReference.self) { group -> [FileReference] in
            for (i, r) in resources.enumerated() {
                let context = i % 2 == 0 ? a : b
                group.addTask { try await context.revalidate(resourceId: r.id, location: Self.location(r)!, parent: MediaResourceReference(parent)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(all.count, resources.count)
        XCTAssertEqual(f.counters().parents[parent.key], 1, "the second process reused the first one's answer")
        let (sa, sb) = (await a.stats, await b.stats)
        XCTAssertEqual(sa.totalCalls + sb.totalCalls, 1)
        XCTAssertEqual(sa.reusedFromOtherProcess + sb.reusedFromOtherProcess, 1)
        f.fx.server.updateFaults(FaultConfig(latencyMs: 0))
        let box = try f.fx.mediaBox(fetcher: f.fx.fetcher(revalidator: b))
        try await f.fx.fetchAndCheck(box, resources[1], fileId: Self.fileId(resources[1]))

        // A crashed holder's lease expires: the waiter takes over after it.
        let avatarPeer = try XCTUnwrap(f.fx.server.dataset().peers.first { $0.photo != nil })
        let avatar = MediaParent.peerAvatar(PeerId(avatarPeer.id))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await f.postbox.transaction { tx in
            _ = try tx.revalidationLeases.acquire(avatar, holder: "crashed", nowMs: now, durationMs: 600)
        }
        let started = ContinuousClock.now
        let snapshot = try await b.references(of: avatar)
        XCTAssertFalse(snapshot.gone)
        XCTAssertGreaterThanOrEqual(Self.seconds(ContinuousClock.now - started), 0.4)
        XCTAssertEqual(f.counters().parents[ParentEntity.peerAvatar(peerId: avatarPeer.id).key], 1)
    }
}
