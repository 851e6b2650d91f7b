import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import Postbox
import TestSupport
import XCTest

/// Resume: an interrupted upload sends only the parts without an acknowledgement row (the
/// server's per-part receipts prove it), secret uploads resend identical bytes, and an upload
/// the server dropped starts again under a new file id.
final class MultipartUploadResumeTests: XCTestCase {
    /// Starts an upload and cancels it after `parts` acknowledged parts. The parts go out at 25
    /// a second: a part's place in flight comes back with its answer, before its
    /// acknowledgement commits, so unpaced on loopback every part could be answered (and then
    /// acknowledged) before the cancellation, leaving nothing to resume.
    func interrupted(_ f: UploadFixture, item: Int64, after parts: Int) async throws {
        let trigger = UploadPartTrigger(after: parts)
        let upload = f.upload({ $0.pacer = CloudRequestPacer(rate: 25) }, observer: { trigger.observe($0) })
        let task = Task { try await upload.upload(itemId: item) }
        trigger.attach(task)
        do {
            _ = try await task.value
            XCTFail("the upload should have been interrupted")
        } catch {
            XCTAssertTrue(error is CancellationError || "\(error)".contains("cancel"), "\(error)")
        }
    }

    func resume(secret: Bool) async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let size = 20_000_000  // big mode: 39 parts of 512 KiB
        let path = try f.makeFile("r.bin", size: size)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, secret: secret))
        try await interrupted(f, item: item.id, after: 25)
        let mid = try await f.item(item.id)
        XCTAssertEqual(mid.state, .uploading)
        let acked = Set(try await f.acked(item.id).map(Int.init))
        XCTAssertGreaterThanOrEqual(acked.count, 25)
        XCTAssertLessThan(acked.count, Int(mid.totalParts))
        let before = f.receipts(mid.fileId)
        for p in acked { XCTAssertEqual(before[p], 1, "part \(p) acknowledged once") }

        let r = try await f.upload().upload(itemId: item.id)
        XCTAssertEqual(r.fileId, mid.fileId, "same upload resumed")
        XCTAssertEqual(r.partsSkipped, acked.count)
        XCTAssertEqual(r.partsSent, Int(mid.totalParts) - acked.count, "only the unacknowledged parts are sent")
        let after = f.receipts(mid.fileId)
        for p in acked { XCTAssertEqual(after[p], before[p], "acknowledged part \(p) not sent again") }
        for p in 0..<Int(mid.totalParts) { XCTAssertGreaterThanOrEqual(after[p] ?? 0, 1, "part \(p) arrived") }
        let done = try await f.item(item.id)
        if secret {
            XCTAssertEqual(try UploadFixture.decrypt(try f.storedBytes(documentId: r.documentId), item: done), original)
        } else {
            XCTAssertEqual(try f.server.fileInfo(id: r.documentId)?.sha256, item.sha256)
        }
        let count = try await f.messages(randomId: item.randomId)
        XCTAssertEqual(count, 1)
    }

    func testResumeSendsOnlyUnacknowledgedParts() async throws { try await resume(secret: false) }

    func testSecretResumeResendsIdenticalBytes() async throws { try await resume(secret: true) }

    func testDroppedUploadRestartsWithANewFileId() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let path = try f.makeFile("d.bin", size: 12_000_000)
        let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer))
        try await interrupted(f, item: item.id, after: 10)
        let mid = try await f.item(item.id)
        f.server.forgetUpload(fileId: mid.fileId)
        let events = UploadEventLog()
        let r = try await f.upload(observer: { events.append($0) }).upload(itemId: item.id)
        XCTAssertEqual(r.restarts, 1)
        XCTAssertNotEqual(r.fileId, mid.fileId, "a new file id after the server dropped the upload")
        XCTAssertEqual(f.receipts(r.fileId).count, Int(mid.totalParts), "every part sent under the new id")
        XCTAssertTrue(events.restartReasons.contains { $0.contains("FILE_PART_") && $0.contains("_MISSING") }, "\(events.restartReasons)")
        XCTAssertEqual(try f.server.fileInfo(id: r.documentId)?.sha256, item.sha256)
        let count = try await f.messages(randomId: item.randomId)
        XCTAssertEqual(count, 1)
    }
}

final class UploadEventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [MultipartUploadEvent] = []
    func append(_ e: MultipartUploadEvent) { lock.lock(); events.append(e); lock.unlock() }
    var restartReasons: [String] {
        lock.lock(); defer { lock.unlock() }
        return events.compactMap { if case let .restarted(_, _, _, reason) = $0 { return reason } else { return nil } }
    }
}
