import Foundation
import Postbox
import TestSupport
import XCTest

/// Several processes on one file, and a process killed mid-transaction: real child processes.
final class ProcessTests: XCTestCase {
    let testkit = Products.executable("jobrun-testkit")

    func testTwoProcessesWritingConcurrentlyBothFinishWithEveryWrite() throws {
        try forEachEngine { store in
            let path = try store.childSpec()
            _ = try store.postbox()  // create before the race
            // A PostgreSQL commit is a few round trips to the server: fewer of them still race.
            let perProcess = store.engine == .sqlite ? 10_000 : 2_000
            let a = try ChildProcess(testkit, ["write-transactions", path, "1000000", "\(perProcess)"])
            let b = try ChildProcess(testkit, ["write-transactions", path, "2000000", "\(perProcess)"])
            XCTAssertEqual(a.wait(timeout: 600), 0, a.stderr)
            XCTAssertEqual(b.wait(timeout: 600), 0, b.stderr)
            let postbox = try store.postbox()
            XCTAssertEqual(try postbox.readSync { try $0.peers.count() }, 2 * perProcess)
            try postbox.readSync { tx in
                for id in [1_000_000, 1_000_000 + Int64(perProcess) - 1, 2_000_000, 2_000_000 + Int64(perProcess) - 1] {
                    XCTAssertEqual(try tx.peers.get(PeerId(id))?.title, "peer \(id)")
                }
            }
            if store.engine == .sqlite { XCTAssertEqual(try postbox.integrityCheck(), ["ok"]) }
        }
    }

    func testSigkillMidTransactionLeavesItWhollyAbsent() throws {
        try forEachEngine { store in
            let path = try store.childSpec()
            // A PostgreSQL transaction this size still sends rows to the server before the kill.
            let rows = store.engine == .sqlite ? 200_000 : 40_000
            let child = try ChildProcess(testkit, ["big-transaction", path, "\(rows)"])
            XCTAssertTrue(child.waitForOutput("midway", timeout: 300), "child never reached the middle: \(child.stderr)")
            if store.engine == .postgres {
                // The server holds the half-written transaction open for the child.
                let open = try PostgresServer.shared().psql("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'")
                XCTAssertGreaterThanOrEqual(Int(open) ?? 0, 1, "the child's transaction is open on the server")
            }
            child.signal(SIGKILL)
            child.wait()
            let postbox = try store.postbox()
            if store.engine == .sqlite { XCTAssertEqual(try postbox.integrityCheck(), ["ok"]) }
            XCTAssertEqual(try postbox.readSync { try $0.peers.get(PeerId(1))?.title }, "committed before", "the earlier transaction is wholly present")
            XCTAssertEqual(try postbox.readSync { try $0.messages.count(peer: PeerId(2)) }, 0, "the killed transaction is wholly absent")
            // The store stays writable after the crash.
            try postbox.transactionSync { try $0.messages.add([Message(id: MessageId(peerId: PeerId(2), id: 1), timestamp: 1)]) }
            XCTAssertEqual(try postbox.readSync { try $0.messages.count(peer: PeerId(2)) }, 1)
        }
    }
}
