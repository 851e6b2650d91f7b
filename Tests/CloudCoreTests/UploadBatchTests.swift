import CloudCore
import CloudCrypto
import CloudProtocol
import Foundation
import Postbox
import XCTest

/// Enqueueing many files at once (all or none) and many uploads sharing group commits, against
/// a real in-process cloudd and a real Postbox file.
final class UploadBatchTests: XCTestCase {
    func testABatchWithARefusedFileLeavesNothingAndAGoodBatchKeepsItsOrder() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let a = try f.makeFile("a.bin", size: 1000)
        let b = try f.makeFile("b.bin", size: 200_000)
        let c = try f.makeFile("c.bin", size: 1)
        let missing = f.directory.file("gone.bin")
        do {
            _ = try await f.queue.enqueue([a, missing, c].map { UploadRequest(path: $0, peerId: f.peer) })
            XCTFail("a batch with a missing file must throw")
        } catch let error as MultipartUploadError {
            XCTAssertTrue(error.description.contains(missing), error.description)
        }
        let afterRefusal = try await f.queue.items()
        XCTAssertEqual(afterRefusal.count, 0, "a refused batch adds no item")
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: f.queue.directory)) ?? []
        XCTAssertEqual(leftovers, [], "a refused batch leaves no staged file")

        let items = try await f.queue.enqueue([a, b, c].map { UploadRequest(path: $0, peerId: f.peer) })
        XCTAssertEqual(items.map(\.originalName), ["a.bin", "b.bin", "c.bin"])
        XCTAssertEqual(items.map(\.id), items.map(\.id).sorted(), "ids follow the order of the requests")
        XCTAssertEqual(Set(items.map(\.randomId)).count, 3)
        for (item, path) in zip(items, [a, b, c]) {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(item.size, Int64(data.count))
            XCTAssertEqual(item.sha256, SHA256.hash(data).hexString)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: item.stagedPath)), data, "staged copy of \(path)")
        }
        let stored = try await f.queue.items()
        XCTAssertEqual(stored.map(\.id), items.map(\.id))
        XCTAssertTrue(stored.allSatisfy { $0.state == .queued })
    }

    func testUploadsSharingGroupCommitsAreSentOnceAndALostLeaseFailsOnlyItsItem() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let paths = try (0..<24).map { try f.makeFile("s\($0).bin", size: 10_000 + $0 * 17_000) }
        let items = try await f.queue.enqueue(paths.map { UploadRequest(path: $0, peerId: f.peer) })
        // When its parts start, the victim's lease passes to another holder: its first
        // acknowledgement, grouped with the others' commits, must fail alone.
        let victim = items[5].id
        let upload = try await leasedUpload(items, f, tag: "batch", victim: victim) {
            guard case .started(let item, _, _, _, _, _, _, _) = $0 else { return false }
            return item == victim
        }
        let outcomes = await withTaskGroup(of: (Int64, Result<MultipartUploadResult, any Error>).self) { group in
            for item in items {
                group.addTask {
                    do { return (item.id, .success(try await upload.upload(itemId: item.id))) } catch { return (item.id, .failure(error)) }
                }
            }
            var out: [Int64: Result<MultipartUploadResult, any Error>] = [:]
            for await (id, r) in group { out[id] = r }
            return out
        }
        for item in items {
            switch outcomes[item.id]! {
            case .success(let r):
                XCTAssertNotEqual(item.id, victim, "the item whose lease was lost is not sent")
                XCTAssertEqual(
                    try f.storedBytes(documentId: r.documentId), try Data(contentsOf: URL(fileURLWithPath: paths[items.firstIndex { $0.id == item.id }!])))
                let stored = try await f.item(item.id)
                XCTAssertEqual(stored.state, .sent)
                XCTAssertEqual(stored.messageId, r.messageId)
                let rows = try await f.acked(item.id)
                XCTAssertEqual(rows, [], "a sent item keeps no part rows")
                let sent = try await f.messages(randomId: item.randomId)
                XCTAssertEqual(sent, 1, "item \(item.id) sent once")
                XCTAssertEqual(f.receipts(stored.fileId).values.max(), 1, "no part of item \(item.id) sent twice")
            case .failure(let error):
                XCTAssertEqual(item.id, victim, "only the victim fails: \(error)")
                guard case MultipartUploadError.leaseLost? = error as? MultipartUploadError else { return XCTFail("\(error)") }
                let rows = try await f.acked(victim)
                XCTAssertEqual(rows, [], "a failed check writes nothing")
                let sent = try await f.messages(randomId: item.randomId)
                XCTAssertEqual(sent, 0)
            }
        }
        guard case .failure = outcomes[victim]! else { return XCTFail("the victim must fail") }
    }

    /// A one-part file goes with its send in one container, and its part's acknowledgement is
    /// not written (marking the item sent drops it at once): marking it sent checks the lease
    /// instead, so a lease lost while the container was out still fails the item, unmarked.
    func testAContainedUploadThatLostItsLeaseIsNotMarkedSent() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let paths = try (0..<2).map { try f.makeFile("c\($0).bin", size: 20_000 + $0 * 1_000) }
        let items = try await f.queue.enqueue(paths.map { UploadRequest(path: $0, peerId: f.peer) })
        let victim = items[0].id
        // The container's answer is in: the lease passes to another holder now.
        let upload = try await leasedUpload(items, f, tag: "contained", victim: victim) {
            guard case .partSent(let item, _, _) = $0 else { return false }
            return item == victim
        }
        do {
            _ = try await upload.upload(itemId: victim)
            XCTFail("the victim must fail")
        } catch {
            guard case MultipartUploadError.leaseLost? = error as? MultipartUploadError else { return XCTFail("\(error)") }
        }
        let stored = try await f.item(victim)
        XCTAssertNotEqual(stored.state, .sent, "an item whose lease was lost is not marked sent by the old holder")
        XCTAssertNil(stored.messageId)
        XCTAssertEqual(f.server.counters().methods["container", default: 0], 1, "the part and its send went in one container")

        let other = try await upload.upload(itemId: items[1].id)
        let done = try await f.item(items[1].id)
        XCTAssertEqual(done.state, .sent)
        XCTAssertEqual(done.messageId, other.messageId)
        let rows = try await f.acked(items[1].id)
        XCTAssertEqual(rows, [], "a sent item keeps no part rows")
        XCTAssertEqual(other.partsSent, 1)
        XCTAssertEqual(try f.storedBytes(documentId: other.documentId), try Data(contentsOf: URL(fileURLWithPath: paths[1])))
    }

    /// An upload of `items`, all claimed under one lease of this process, whose `victim` loses
    /// its lease to another host at the first event `losesLease` picks.
    private func leasedUpload(
        _ items: [UploadItem], _ f: UploadFixture, tag: String, victim: Int64, losesLease: @escaping @Sendable (MultipartUploadEvent) -> Bool
    ) async throws -> MultipartUpload {
        let lease = UploadLease(holder: UploadLeaseHolder.current(tag: tag), duration: 60)
        for _ in items {
            guard case .item = try await f.queue.claim(lease: lease) else {
                XCTFail("every item is claimable")
                throw CancellationError()
            }
        }
        let postbox = f.postbox
        return f.upload({
            $0.lease = lease
            $0.checkPeer = false
        }) { event in
            guard losesLease(event) else { return }
            try? postbox.transactionSync { tx in
                var it = try tx.uploadQueue.get(victim)!
                it.leaseHolder = "another-host/1/1/run"
                try tx.uploadQueue.set(it)
            }
        }
    }
}
