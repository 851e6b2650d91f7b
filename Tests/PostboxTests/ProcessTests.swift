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
            let perProcess = store.engine.isSQLite ? 10_000 : 2_000
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

    /// Cron, the scheduler and `enqueue-upload` open one store at the same moments, each for a
    /// few transactions. The WAL survives every close (kept when small, checkpointed and emptied
    /// when not), and the opener that finds it must neither fail with a busy store nor lose a
    /// write of the other process.
    func testTwoProcessesOpeningAndClosingOneStoreAtOnceManyTimesLoseNothing() throws {
        let store = TestStore(.ofTestRoot)
        let path = store.identity
        _ = try store.postbox()  // created before the race, closed at once
        let spec = try store.childSpec()
        let opens = 300
        let a = try ChildProcess(testkit, ["open-write-close", spec, "1000000", "\(opens)"])
        let b = try ChildProcess(testkit, ["open-write-close", spec, "2000000", "\(opens)"])
        XCTAssertEqual(a.wait(timeout: 600), 0, a.stderr)
        XCTAssertEqual(b.wait(timeout: 600), 0, b.stderr)
        var st = stat()
        XCTAssertEqual(stat(path + "-wal", &st), 0, "the WAL is kept at close")
        XCTAssertLessThanOrEqual(Int64(st.st_size), SqliteValueBox.walKeptAtCloseBytes, "a close leaves at most a small WAL")
        let postbox = try store.postbox()
        XCTAssertEqual(try postbox.readSync { try $0.peers.count() }, 2 * opens)
        try postbox.readSync { tx in
            for id in [1_000_000, 1_000_000 + Int64(opens) - 1, 2_000_000, 2_000_000 + Int64(opens) - 1] {
                XCTAssertEqual(try tx.peers.get(PeerId(id))?.title, "peer \(id)")
            }
        }
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
    }

    func testSigkillMidTransactionLeavesItWhollyAbsent() throws {
        try forEachEngine { store in
            let path = try store.childSpec()
            // A PostgreSQL transaction this size still sends rows to the server before the kill.
            let rows = store.engine.isSQLite ? 200_000 : 40_000
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
