import CSQLite
import Foundation
import Postbox
import TestSupport
import XCTest

/// An encrypted store: no page in clear on disk, the wrong key (or none) refused without a byte
/// changed, a changed page refused by file and page, and everything above `ValueBox` unaware.
final class EncryptedStoreTests: XCTestCase {
    static let needle = "needle-7f3a9c-secret-message-text"

    private func fill(_ postbox: Postbox, peer: Int64 = 1, count: Int = 300) throws {
        try postbox.transactionSync { tx in
            try tx.messages.add(
                (1...count).map { Message(id: MessageId(peerId: PeerId(peer), id: Int32($0)), timestamp: Int32($0), text: "\(Self.needle) \($0)") })
        }
    }

    private func contains(_ path: String, _ text: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        return data.range(of: Data(text.utf8)) != nil
    }

    /// The exact bytes of a store's database and WAL files.
    private func snapshot(_ path: String) -> [String: Data?] {
        [path: FileManager.default.contents(atPath: path), path + "-wal": FileManager.default.contents(atPath: path + "-wal")]
    }

    func testNoPageIsInClearOnDiskAndTheStoreReadsBack() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let key = StoreKey.random()
        do {
            let postbox = try Postbox(path: path, key: key)
            try fill(postbox)
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + "-wal"), "the last commits are in the WAL")
        XCTAssertFalse(contains(path, Self.needle), "the database file holds no message text")
        XCTAssertFalse(contains(path + "-wal", Self.needle), "the WAL holds no message text")
        XCTAssertFalse(contains(path, "SQLite format 3"), "the header is the salt, not SQLite's")
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: path), true)
        let reopened = try Postbox(path: path, key: key)
        XCTAssertEqual(try reopened.readSync { try $0.messages.count(peer: PeerId(1)) }, 300)
        XCTAssertEqual(try reopened.readSync { try $0.messages.get(MessageId(peerId: PeerId(1), id: 7))?.text }, "\(Self.needle) 7")
        XCTAssertEqual(try reopened.integrityCheck(), ["ok"])
        // Checkpointed into the database file, still nothing in clear.
        _ = try reopened.compact()
        XCTAssertFalse(contains(path, Self.needle))
    }

    func testAPlainStoreIsReportedPlainAndNoStoreIsNil() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        XCTAssertNil(try SqliteValueBox.isEncrypted(path: path))
        _ = try Postbox(path: path)
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: path), false)
    }

    func testTheWrongKeyNoKeyAndAKeyForAPlainStoreAreRefusedWithoutAByteChanged() throws {
        let dir = TemporaryDirectory()
        let encrypted = dir.file("encrypted.sqlite")
        let plain = dir.file("plain.sqlite")
        let key = StoreKey.random()
        try fill(try Postbox(path: encrypted, key: key))
        try fill(try Postbox(path: plain))
        let before = snapshot(encrypted).merging(snapshot(plain)) { a, _ in a }
        XCTAssertThrowsError(try Postbox(path: encrypted, key: StoreKey.random())) {
            XCTAssertEqual($0 as? PostboxError, .wrongKey(path: encrypted))
            XCTAssertTrue("\($0)".contains(encrypted))
        }
        XCTAssertThrowsError(try Postbox(path: encrypted)) { XCTAssertEqual($0 as? PostboxError, .keyRequired(path: encrypted)) }
        XCTAssertThrowsError(try Postbox(path: encrypted, readOnly: true)) { XCTAssertEqual($0 as? PostboxError, .keyRequired(path: encrypted)) }
        XCTAssertThrowsError(try Postbox(path: plain, key: key)) { XCTAssertEqual($0 as? PostboxError, .notEncrypted(path: plain)) }
        let after = snapshot(encrypted).merging(snapshot(plain)) { a, _ in a }
        XCTAssertEqual(before, after, "no byte of either store changed")
        XCTAssertEqual(try Postbox(path: encrypted, key: key).readSync { try $0.messages.count(peer: PeerId(1)) }, 300)
    }

    func testAKeyIsThirtyTwoBytesAndNeverPrinted() throws {
        XCTAssertThrowsError(try StoreKey(rawBytes: [UInt8](repeating: 1, count: 31))) {
            guard case .invalidKey = $0 as? PostboxError else { return XCTFail("\($0)") }
        }
        let key = try StoreKey(rawBytes: [UInt8](repeating: 0xAB, count: 32))
        var dumped = ""
        dump(key, to: &dumped)
        for shown in ["\(key)", String(reflecting: key), dumped] {
            XCTAssertTrue(shown.contains("StoreKey(redacted)") || shown.contains("StoreKey"), shown)
            XCTAssertFalse(shown.lowercased().contains("ab"), shown)
            XCTAssertFalse(shown.contains("171"), shown)
        }
        XCTAssertNotEqual(StoreKey.random(), StoreKey.random())
    }

    /// A page changed on disk is an error naming the file and the page; its bytes reach no
    /// caller, and the file is not rewritten.
    func testAChangedPageIsAnErrorNamingTheFileAndPage() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let key = StoreKey.random()
        do {
            let postbox = try Postbox(path: path, key: key)
            try fill(postbox, count: 2000)
            _ = try postbox.compact()  // every page in the database file, the WAL empty
        }
        let page: Int64 = 5
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64((page - 1) * 4096 + 100))
        let original = try handle.read(upToCount: 1)![0]
        try handle.seek(toOffset: UInt64((page - 1) * 4096 + 100))
        try handle.write(contentsOf: Data([original ^ 0x01]))
        try handle.close()
        let changed = FileManager.default.contents(atPath: path)
        let postbox = try Postbox(path: path, key: key)
        XCTAssertThrowsError(try postbox.integrityCheck()) {
            XCTAssertEqual($0 as? PostboxError, .pageAuthenticationFailed(path: path, page: page))
            XCTAssertTrue("\($0)".contains("page \(page)"), "\($0)")
        }
        XCTAssertEqual(FileManager.default.contents(atPath: path), changed, "the changed page is not rewritten")
    }

    /// A frame in the WAL whose page was changed and whose checksums were made to match again
    /// (they are not keyed) fails its HMAC when SQLite recovers the WAL.
    func testAChangedWALFrameIsRefused() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let key = StoreKey.random()
        try fill(try Postbox(path: path, key: key), count: 20)
        var wal = try XCTUnwrap(FileManager.default.contents(atPath: path + "-wal"))
        XCTAssertGreaterThan(wal.count, 32 + 4120)
        wal[32 + 24 + 200] ^= 0x01
        WALChecksums.rewrite(&wal)
        try wal.write(to: URL(fileURLWithPath: path + "-wal"))
        try? FileManager.default.removeItem(atPath: path + "-shm")  // recovery reads every frame
        XCTAssertThrowsError(try Postbox(path: path, key: key).readSync { try $0.messages.count(peer: PeerId(1)) }) {
            guard case .pageAuthenticationFailed(let file, _) = $0 as? PostboxError else { return XCTFail("\($0)") }
            XCTAssertEqual(file, path + "-wal")
        }
    }

    /// A transaction larger than the page cache writes pages to the WAL before it commits, and
    /// overwrites those frames when it changes the pages again; SQLite then rewrites the
    /// frames' checksums at commit. The WAL must stay valid: a copy of the files without the
    /// shared memory (recovered from the WAL alone) holds every row, for jobrun and SQLCipher.
    func testFramesOverwrittenByTheirTransactionLeaveAValidWAL() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let copy = dir.file("copy.sqlite")
        let key = StoreKey.random()
        let rows = ValueBoxTable(id: 100, keyType: .int64)
        let box = try SqliteValueBox(path: path, options: .init(cacheSizeKiB: 64, key: key))
        try box.begin()
        for i in 0..<20_000 { try box.set(rows, key: ValueBoxKey(Int64(i)), value: Data(repeating: UInt8(i & 0xff), count: 200)) }
        for i in stride(from: 0, to: 20_000, by: 7) { try box.set(rows, key: ValueBoxKey(Int64(i)), value: Data("changed \(i)".utf8)) }
        try box.commit()
        XCTAssertGreaterThan(box.walFileBytes(), 1_000_000, "the transaction is in the WAL")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        box.close()
        let recovered = try SqliteValueBox(path: copy, options: .init(key: key))
        XCTAssertEqual(try recovered.count(rows, .all), 20_000)
        XCTAssertEqual(try recovered.get(rows, key: ValueBoxKey(Int64(7 * 1000))), Data("changed 7000".utf8))
        XCTAssertEqual(try recovered.get(rows, key: ValueBoxKey(Int64(1))), Data(repeating: 1, count: 200))
        XCTAssertEqual(try recovered.integrityCheck(), ["ok"])
    }

    /// A checkpoint writes each page's ciphertext from the WAL into the database file as it is
    /// (authenticated, not encrypted a second time).
    func testACheckpointCopiesTheCiphertextOfTheWAL() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let box = try SqliteValueBox(path: path, options: .init(key: StoreKey.random()))
        let rows = ValueBoxTable(id: 100, keyType: .int64)
        try box.begin()
        for i in 0..<500 { try box.set(rows, key: ValueBoxKey(Int64(i)), value: Data(repeating: 7, count: 100)) }
        try box.commit()
        let wal = try XCTUnwrap(FileManager.default.contents(atPath: path + "-wal"))
        var newest: [Int: Data] = [:]
        for offset in stride(from: 32, to: wal.count - 4119, by: 4120) {
            let page = wal[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            newest[page] = wal[offset + 24..<offset + 4120]
        }
        XCTAssertGreaterThan(newest.count, 5)
        XCTAssertFalse(try box.walCheckpoint(truncate: false).busy)
        let database = try XCTUnwrap(FileManager.default.contents(atPath: path))
        for (page, ciphertext) in newest {
            XCTAssertEqual(database[(page - 1) * 4096..<page * 4096], ciphertext, "page \(page)")
        }
        XCTAssertEqual(try box.integrityCheck(), ["ok"])
    }

    /// A checkpoint copies a frame's ciphertext without decrypting it, as SQLCipher does: a frame
    /// changed on disk after it was written is copied as it is, and the page then fails its HMAC
    /// when it is read from the database file, naming that file and the page; its bytes are
    /// never returned.
    func testAFrameChangedBeforeItsCheckpointFailsWhenReadFromTheDatabase() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let key = StoreKey.random()
        let rows = ValueBoxTable(id: 100, keyType: .int64)
        let box = try SqliteValueBox(path: path, options: .init(key: key))
        try box.begin()
        for i in 0..<500 { try box.set(rows, key: ValueBoxKey(Int64(i)), value: Data(repeating: 7, count: 100)) }
        try box.commit()
        let wal = try XCTUnwrap(FileManager.default.contents(atPath: path + "-wal"))
        var frames: [Int: Int] = [:]  // page → offset of its newest frame
        for offset in stride(from: 32, to: wal.count - 4119, by: 4120) { frames[wal[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }] = offset }
        let page = try XCTUnwrap(frames.keys.filter { $0 > 2 }.max())
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path + "-wal"))
        try handle.seek(toOffset: UInt64(frames[page]! + 24 + 200))
        let original = try XCTUnwrap(handle.read(upToCount: 1))[0]
        try handle.seek(toOffset: UInt64(frames[page]! + 24 + 200))
        try handle.write(contentsOf: Data([original ^ 0x01]))
        try handle.close()
        XCTAssertFalse(try box.walCheckpoint(truncate: true).busy)
        box.close()
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int, 0, "every frame is in the database file")
        let reopened = try SqliteValueBox(path: path, options: .init(key: key))
        XCTAssertThrowsError(try reopened.integrityCheck()) {
            XCTAssertEqual($0 as? PostboxError, .pageAuthenticationFailed(path: path, page: Int64(page)))
        }
    }

    /// The WAL after a kill: a child commits transactions and is killed; the store opens with
    /// every commit.
    func testCommitsInTheWALSurviveAKill() throws {
        let store = TestStore(.encryptedSqlite)
        try store.killWriterMidTransaction(rows: 3000)
        let postbox = try store.postbox()
        XCTAssertEqual(try postbox.readSync { try $0.peers.get(PeerId(1))?.title }, "committed before")
        XCTAssertEqual(try postbox.readSync { try $0.messages.count(peer: PeerId(2)) }, 0)
        XCTAssertEqual(try postbox.integrityCheck(), ["ok"])
    }

    func testExportEncryptsDecryptsAndRekeysEveryTable() throws {
        let dir = TemporaryDirectory()
        let plain = dir.file("plain.sqlite")
        try fill(try Postbox(path: plain), count: 1000)
        let first = StoreKey.random()
        let second = StoreKey.random()
        try SqliteValueBox.export(from: plain, fromKey: nil, to: dir.file("a.sqlite"), toKey: first)
        try SqliteValueBox.export(from: dir.file("a.sqlite"), fromKey: first, to: dir.file("b.sqlite"), toKey: second)
        try SqliteValueBox.export(from: dir.file("b.sqlite"), fromKey: second, to: dir.file("c.sqlite"), toKey: nil)
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: dir.file("a.sqlite")), true)
        XCTAssertFalse(contains(dir.file("a.sqlite"), Self.needle))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("a.sqlite-wal")) && contains(dir.file("a.sqlite-wal"), Self.needle))
        let exported = try Postbox(path: dir.file("b.sqlite"), key: second)
        XCTAssertEqual(try exported.readSync { try $0.messages.count(peer: PeerId(1)) }, 1000)
        XCTAssertEqual(try exported.integrityCheck(), ["ok"])
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: dir.file("c.sqlite")), false)
        for table in try rawTables(plain) {
            XCTAssertEqual(try rawRows(dir.file("c.sqlite"), table), try rawRows(plain, table), "table \(table) survives the round trip")
        }
        XCTAssertThrowsError(try SqliteValueBox.export(from: plain, fromKey: nil, to: dir.file("a.sqlite"), toKey: first), "the target must be new")
    }

    private func rawTables(_ path: String) throws -> [String] {
        try SqliteValueBox(path: path, options: .init(readOnly: true)).queryStrings("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    }

    private func rawRows(_ path: String, _ table: String) throws -> [String] {
        try SqliteValueBox(path: path, options: .init(readOnly: true)).queryStrings("SELECT hex(key) || ':' || hex(value) FROM \"\(table)\" ORDER BY key")
    }
}

/// SQLite's WAL checksums recomputed over a WAL's bytes as they are (a test's forgery).
enum WALChecksums {
    static func rewrite(_ wal: inout Data) {
        let bigEndian = wal[3] & 1 == 1
        func word(_ at: Int) -> UInt32 {
            let b = [wal[at], wal[at + 1], wal[at + 2], wal[at + 3]]
            return bigEndian
                ? UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
                : UInt32(b[3]) << 24 | UInt32(b[2]) << 16 | UInt32(b[1]) << 8 | UInt32(b[0])
        }
        /// Stored checksums are big endian whatever the words' order.
        func stored(_ at: Int) -> UInt32 { UInt32(wal[at]) << 24 | UInt32(wal[at + 1]) << 16 | UInt32(wal[at + 2]) << 8 | UInt32(wal[at + 3]) }
        func put(_ value: UInt32, _ at: Int) {
            for i in 0..<4 { wal[at + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * i)) }
        }
        func sum(_ start: Int, _ count: Int, _ s: (UInt32, UInt32)) -> (UInt32, UInt32) {
            var (s1, s2) = s
            for i in stride(from: start, to: start + count, by: 8) {
                s1 = s1 &+ word(i) &+ s2
                s2 = s2 &+ word(i + 4) &+ s1
            }
            return (s1, s2)
        }
        var s = (stored(24), stored(28))
        var offset = 32
        while offset + 4120 <= wal.count {
            s = sum(offset, 8, s)
            s = sum(offset + 24, 4096, s)
            put(s.0, offset + 16)
            put(s.1, offset + 20)
            offset += 4120
        }
    }
}
