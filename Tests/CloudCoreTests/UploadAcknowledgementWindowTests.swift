import CloudCore
import CloudProtocol
import Foundation
import Synchronization
import XCTest

/// A part's place among the parts in flight comes back with the server's answer, not with the
/// commit of its acknowledgement: while the store can commit nothing, every part of the file
/// still reaches the server, and once the store is free every acknowledgement commits and the
/// file is sent.
final class UploadAcknowledgementWindowTests: XCTestCase {
    func testPartsKeepGoingOutWhileTheirAcknowledgementsWaitForTheStore() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let size = 11_000_000
        let parts = (size + UploadPartRules.maxPartSize - 1) / UploadPartRules.maxPartSize
        let item = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("big.bin", size: size), peerId: f.peer))
        f.server.resetCounters()
        let server = f.server
        let postbox = f.postbox
        let arrivedWhileHeld = Mutex(-1)
        let held = DispatchSemaphore(value: 0)
        let upload = f.upload { _ in
        } observer: { event in
            guard case .started = event else { return }
            // The store is held from before the first part until every part has arrived (or
            // 30 s have passed): no acknowledgement can commit meanwhile.
            Thread.detachNewThread {
                try? postbox.transactionSync { _ in
                    held.signal()
                    let deadline = Date().addingTimeInterval(30)
                    var arrived = 0
                    while Date() < deadline {
                        arrived = server.counters().methods[CloudMethod.saveBigFilePart.rawValue, default: 0]
                        if arrived >= parts { break }
                        Thread.sleep(forTimeInterval: 0.01)
                    }
                    arrivedWhileHeld.withLock { $0 = arrived }
                }
            }
            held.wait()
        }
        let result = try await upload.upload(itemId: item.id)
        XCTAssertEqual(arrivedWhileHeld.withLock { $0 }, parts, "every part reached the server while no acknowledgement could commit")
        XCTAssertEqual(result.partsSent, parts)
        let stored = try await f.item(item.id)
        XCTAssertEqual(stored.state, .sent)
        XCTAssertEqual(try f.storedBytes(documentId: result.documentId), try Data(contentsOf: URL(fileURLWithPath: item.stagedPath)))
    }
}
