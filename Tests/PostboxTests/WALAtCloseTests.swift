import Foundation
import Postbox
import XCTest

/// What the last connection's close leaves of the WAL: a small WAL is synced and kept for the
/// next run to append to; a large one is checkpointed into the database and emptied.
final class WALAtCloseTests: XCTestCase {
    let rows = ValueBoxTable(id: 101, keyType: .int64)

    private func temporaryDatabase() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("wal-close-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir + "/db.sqlite"
    }

    private func write(_ path: String, count: Int, valueBytes: Int) throws {
        let vb = try SqliteValueBox(path: path)
        for i in 0..<count {
            try vb.begin()
            try vb.set(rows, key: ValueBoxKey(Int64(i)), value: Data(repeating: UInt8(i & 0xff), count: valueBytes))
            try vb.commit()
        }
        vb.close()
    }

    private func walBytes(_ path: String) -> Int64 {
        var st = stat()
        return stat(path + "-wal", &st) == 0 ? Int64(st.st_size) : -1
    }

    private func immutable() -> SqliteValueBox.Options {
        var options = SqliteValueBox.Options(readOnly: true)
        options.immutable = true
        return options
    }

    /// The rows the database file holds by itself: a copy of the file alone, opened immutable.
    private func rowsInDatabaseFileAlone(_ path: String) throws -> Int {
        let alone = path + ".alone"
        try? FileManager.default.removeItem(atPath: alone)
        try FileManager.default.copyItem(atPath: path, toPath: alone)
        return try SqliteValueBox(path: alone, options: immutable()).count(rows)
    }

    func testASmallWALIsKeptAtCloseAndTheNextOpenerReadsIt() throws {
        let path = try temporaryDatabase()
        try write(path, count: 5, valueBytes: 10)
        let wal = walBytes(path)
        XCTAssertGreaterThan(wal, 0, "the commits stay in the WAL")
        XCTAssertLessThanOrEqual(wal, SqliteValueBox.walKeptAtCloseBytes)
        XCTAssertEqual(try rowsInDatabaseFileAlone(path), 0, "nothing was checkpointed at close")
        XCTAssertThrowsError(try SqliteValueBox(path: path, options: immutable()), "an immutable open would miss the WAL's commits") {
            XCTAssertEqual($0 as? PostboxError, .walUnreadable(path: path))
        }
        let reopened = try SqliteValueBox(path: path)
        XCTAssertEqual(try reopened.count(rows), 5, "the next opener rebuilds the WAL index and sees every commit")
        XCTAssertEqual(try reopened.integrityCheck(), ["ok"])
        try reopened.begin()
        try reopened.set(rows, key: ValueBoxKey(Int64(100)), value: Data([1]))
        try reopened.commit()
        reopened.close()
        XCTAssertGreaterThan(walBytes(path), wal, "the next run appends to the kept WAL")
    }

    func testALargeWALIsCheckpointedAndEmptiedAtClose() throws {
        let path = try temporaryDatabase()
        // Each row takes a page and its overflow page: far more frames than are kept.
        let count = Int(SqliteValueBox.walKeptAtCloseBytes / 4096)
        try write(path, count: count, valueBytes: 6000)
        XCTAssertEqual(walBytes(path), 0, "the WAL was checkpointed and truncated, and the file kept")
        XCTAssertEqual(try rowsInDatabaseFileAlone(path), count, "every row is in the database file itself")
    }

    func testAnotherOpenConnectionKeepsTheWALForItself() throws {
        let path = try temporaryDatabase()
        let other = try SqliteValueBox(path: path)
        try other.begin()
        try other.set(rows, key: ValueBoxKey(Int64(0)), value: Data([0]))
        try other.commit()
        let count = Int(SqliteValueBox.walKeptAtCloseBytes / 4096)
        try write(path, count: count, valueBytes: 6000)
        XCTAssertGreaterThan(walBytes(path), SqliteValueBox.walKeptAtCloseBytes, "not the last connection: no checkpoint")
        other.close()
        XCTAssertEqual(walBytes(path), 0, "the last connection checkpoints the large WAL")
        XCTAssertEqual(try rowsInDatabaseFileAlone(path), count)
    }

    /// `syncCommitted` makes commits durable without checkpointing them: the commit stays in the
    /// WAL the close keeps. A connection with nothing committed, or a reader, has nothing to
    /// sync; a closed one says so.
    func testSyncCommittedSyncsTheWALWithoutCheckpointing() throws {
        let path = try temporaryDatabase()
        let writer = try SqliteValueBox(path: path)
        try writer.syncCommitted()
        try writer.begin()
        try writer.set(rows, key: ValueBoxKey(Int64(1)), value: Data([1]))
        try writer.commit()
        try writer.syncCommitted()
        try writer.syncCommitted()
        let reader = try SqliteValueBox(path: path, options: .init(readOnly: true))
        try reader.syncCommitted()
        XCTAssertEqual(try reader.count(rows), 1)
        reader.close()
        writer.close()
        XCTAssertThrowsError(try writer.syncCommitted(), "a closed connection cannot sync")
        XCTAssertGreaterThan(walBytes(path), 0)
        XCTAssertEqual(try rowsInDatabaseFileAlone(path), 0, "a sync is not a checkpoint")
        XCTAssertEqual(try SqliteValueBox(path: path).count(rows), 1)
    }
}
