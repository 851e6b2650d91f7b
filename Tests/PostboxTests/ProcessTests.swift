import Foundation
import Postbox
import TestSupport
import XCTest

/// Several processes on one file, and a process killed mid-transaction: real child processes.
final class ProcessTests: XCTestCase {
    let testkit = Products.executable("jobrun-testkit")

    func testTwoProcessesWritingConcurrentlyBothFinishWithEveryWrite() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        _ = try Postbox(path: path)  // create before the race
        let perProcess = 10_000
        let a = try ChildProcess(testkit, ["write-transactions", path, "1000000", "\(perProcess)"])
        let b = try ChildProcess(testkit, ["write-transactions", path, "2000000", "\(perProcess)"])
        XCTAssertEqual(a.wait(timeout: 600), 0, a.stderr)
        XCTAssertEqual(b.wait(timeout: 600), 0, b.stderr)
        let postbox = try Postbox(path: path)
        XCTAssertEqual(try postbox.readSync { try $0.peers.count() }, 2 * perProcess)
        try postbox.readSync { tx in
            for id in [1_000_000, 1_000_000 + Int64(perProcess) - 1, 2_000_000, 2_000_000 + Int64(perProcess) - 1] {
                XCTAssertEqual(try tx.peers.get(PeerId(id))?.title, "peer \(id)")
            }
        }
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
    }

    func testSigkillMidTransactionLeavesItWhollyAbsent() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let child = try ChildProcess(testkit, ["big-transaction", path, "200000"])
        XCTAssertTrue(child.waitForOutput("midway", timeout: 300), "child never reached the middle: \(child.stderr)")
        child.signal(SIGKILL)
        child.wait()
        let postbox = try Postbox(path: path)
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
        XCTAssertEqual(try postbox.readSync { try $0.peers.get(PeerId(1))?.title }, "committed before", "the earlier transaction is wholly present")
        XCTAssertEqual(try postbox.readSync { try $0.messages.count(peer: PeerId(2)) }, 0, "the killed transaction is wholly absent")
        // The store stays writable after the crash.
        try postbox.transactionSync { try $0.messages.add([Message(id: MessageId(peerId: PeerId(2), id: 1), timestamp: 1)]) }
        XCTAssertEqual(try postbox.readSync { try $0.messages.count(peer: PeerId(2)) }, 1)
    }
}
