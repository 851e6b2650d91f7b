import Foundation
import Postbox
import TestSupport
import XCTest

/// A durable transaction commits with `synchronous=FULL` and leaves the connection at its
/// configured level; a store opened without checkpoint-on-close keeps its WAL when it closes,
/// and what was committed there is read back by the next opener. Real SQLite files.
final class DurableCommitTests: XCTestCase {
    private let table = ValueBoxTable(id: 100, keyType: .int64)

    private func synchronous(_ vb: SqliteValueBox) throws -> Int64 { try vb.queryInt("PRAGMA synchronous") }

    func testDurableTransactionCommitsAtFullAndRestoresTheConfiguredLevel() throws {
        let dir = TemporaryDirectory()
        let vb = try SqliteValueBox(path: dir.file("db.sqlite"))
        XCTAssertEqual(try synchronous(vb), 1, "NORMAL by default")

        try vb.beginDurable()
        XCTAssertEqual(try synchronous(vb), 2, "FULL while the durable transaction is open, so its COMMIT syncs the WAL")
        try vb.set(table, key: ValueBoxKey(Int64(1)), value: Data([1]))
        try vb.commit()
        XCTAssertEqual(try synchronous(vb), 1, "back to NORMAL after COMMIT")

        try vb.beginDurable()
        try vb.set(table, key: ValueBoxKey(Int64(2)), value: Data([2]))
        vb.rollback()
        XCTAssertEqual(try synchronous(vb), 1, "back to NORMAL after ROLLBACK")
        XCTAssertEqual(try vb.get(table, key: ValueBoxKey(Int64(1))), Data([1]))
        XCTAssertNil(try vb.get(table, key: ValueBoxKey(Int64(2))))

        try vb.begin()
        XCTAssertEqual(try synchronous(vb), 1, "an ordinary transaction stays at NORMAL")
        vb.rollback()
    }

    func testAStoreThatKeepsItsWalCutsItBackAfterCheckpoints() throws {
        let dir = TemporaryDirectory()
        var options = SqliteValueBox.Options()
        options.checkpointOnClose = false
        let kept = try SqliteValueBox(path: dir.file("kept.sqlite"), options: options)
        XCTAssertEqual(try kept.queryInt("PRAGMA journal_size_limit"), 4 << 20, "a WAL outliving its process is cut back to 4 MiB")
        let plain = try SqliteValueBox(path: dir.file("plain.sqlite"))
        XCTAssertEqual(try plain.queryInt("PRAGMA journal_size_limit"), -1, "the default store keeps SQLite's default")
    }

    func testPostboxDurableTransactionIsReadBackAndLeavesNormalCommits() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        do {
            let postbox = try Postbox(path: path, checkpointOnClose: false)
            try await postbox.transaction { tx in try tx.peers.set(Peer(id: PeerId(1), category: .group, title: "first")) }
            try await postbox.transaction(durable: true) { tx in try tx.peers.set(Peer(id: PeerId(2), category: .group, title: "second")) }
            try postbox.readSync { _ in }  // the store's queue has let go of it when this returns
        }
        var st = stat()
        XCTAssertEqual(stat(path + "-wal", &st), 0, "the WAL stays when the store closes without a checkpoint")
        XCTAssertGreaterThan(st.st_size, 0, "and holds the commits")
        let reopened = try Postbox(path: path)
        let titles = try await reopened.read { tx in [try tx.peers.get(PeerId(1))?.title, try tx.peers.get(PeerId(2))?.title] }
        XCTAssertEqual(titles, ["first", "second"], "both commits are read back from the WAL")
    }

    func testDefaultStoreCheckpointsAndRemovesItsWalOnClose() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        do {
            // The blocking form: the store's queue has let go of it when the call returns.
            let postbox = try Postbox(path: path)
            try postbox.transactionSync { tx in try tx.peers.set(Peer(id: PeerId(1), category: .group, title: "only")) }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal"), "the last connection checkpoints and removes the WAL")
        let reopened = try Postbox(path: path)
        let title = try await reopened.read { tx in try tx.peers.get(PeerId(1))?.title }
        XCTAssertEqual(title, "only")
    }
}
