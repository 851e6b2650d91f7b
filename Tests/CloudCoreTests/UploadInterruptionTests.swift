import CloudCore
import Foundation
import Postbox
import XCTest

/// Attempts count failures of the item, not deaths of the uploader: an attempt that never
/// settled (its process killed) is given back, and crash-loop protection is a separate count.
final class UploadInterruptionTests: XCTestCase {
    /// Marks `id` as leased by a process that no longer exists (a SIGKILLed uploader).
    func abandon(_ id: Int64, in f: UploadFixture) async throws {
        try await f.postbox.transaction { tx in
            var it = try tx.uploadQueue.get(id)!
            it.leaseHolder = "\(UploadLeaseHolder.current(tag: "x").split(separator: "/")[0])/999999/1/dead"
            try tx.uploadQueue.set(it)
        }
    }

    /// A holder is alive while its process is: this process, or another live one started when
    /// the name says; not a pid that is gone or now belongs to a process started at another time.
    /// A holder on another host cannot be checked and counts as alive.
    func testALeaseHolderIsAliveExactlyWhileItsProcessIs() throws {
        let mine = UploadLeaseHolder.current(tag: "t")
        let parts = mine.split(separator: "/").map(String.init)
        let host = parts[0], pid = parts[1], start = UInt64(parts[2])!
        XCTAssertTrue(UploadLeaseHolder.isAlive(mine))
        XCTAssertFalse(UploadLeaseHolder.isAlive("\(host)/\(pid)/\(start + 1)/t"), "this pid, started at another time: reused")
        XCTAssertFalse(UploadLeaseHolder.isAlive("\(host)/999999/1/dead"))
        XCTAssertTrue(UploadLeaseHolder.isAlive("another-host/999999/1/t"))

        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        let other = sleeper.processIdentifier
        let stat = try String(contentsOfFile: "/proc/\(other)/stat", encoding: .utf8)
        let otherStart = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")[19]
        XCTAssertTrue(UploadLeaseHolder.isAlive("\(host)/\(other)/\(otherStart)/t"))
        sleeper.terminate()
        sleeper.waitUntilExit()
        XCTAssertFalse(UploadLeaseHolder.isAlive("\(host)/\(other)/\(otherStart)/t"), "its process has ended")
    }

    func testKilledAttemptsAreGivenBackAndACrashLoopFailsTheItemSeparately() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let a = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("a.bin", size: 100), peerId: f.peer))
        let lease = UploadLease(holder: UploadLeaseHolder.current(tag: "t"), duration: 60)

        // Killed mid-attempt again and again: attempts stay at the one in progress.
        for kill in 1...UploadQueue.maxInterruptions {
            guard case .item(let taken) = try await f.queue.claim(lease: lease) else { return XCTFail("kill \(kill)") }
            XCTAssertEqual(taken.attempts, 1, "after \(kill - 1) killed attempts")
            try await abandon(a.id, in: f)
        }
        // One more death: the crash loop is cut, with a reason of its own.
        guard case .none = try await f.queue.claim(lease: lease) else { return XCTFail("a crash-looping item is not handed out again") }
        let failed = try await f.item(a.id)
        XCTAssertEqual(failed.state, .failed)
        XCTAssertEqual(failed.attempts, 0, "no attempt of the item failed")
        XCTAssertTrue(failed.failureReason?.contains("ended \(UploadQueue.maxInterruptions) times in a row") == true, failed.failureReason ?? "")

        // A settled attempt resets the count; a real failure still spends an attempt.
        let b = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("b.bin", size: 100), peerId: f.peer))
        guard case .item = try await f.queue.claim(lease: lease) else { return XCTFail() }
        try await abandon(b.id, in: f)
        guard case .item(let again) = try await f.queue.claim(lease: lease) else { return XCTFail() }
        XCTAssertEqual(again.interruptions, 1)
        let state = try await f.queue.settle(b.id, lease: lease, outcome: .retry(reason: "boom", backoff: 0, maxAttempts: 3))
        XCTAssertEqual(state, .queued)
        let settled = try await f.item(b.id)
        XCTAssertEqual(settled.attempts, 1)
        XCTAssertEqual(settled.interruptions, 0)
    }
}
