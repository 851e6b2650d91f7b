import Foundation
import Postbox
import TestSupport
import XCTest

/// jobrun's encrypted stores are SQLCipher 4's format: SQLCipher itself (the `sqlcipher3`
/// package from PyPI, see `scripts/sqlcipher-interop.py`) reads what jobrun writes, WAL
/// included, and jobrun reads what SQLCipher writes.
final class SQLCipherInteropTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/sqlcipher-interop.py").path

    override func setUpWithError() throws {
        let probe = try ChildProcess.run("/usr/bin/env", ["python3", "-c", "import sqlcipher3"], timeout: 60)
        guard probe.status == 0 else { throw FixtureMissing("sqlcipher3 (pip install sqlcipher3; scripts/install-deps.sh installs it)") }
    }

    private func keyFile(_ key: StoreKey, in dir: TemporaryDirectory) -> String {
        let path = dir.file("key")
        _ = FileManager.default.createFile(atPath: path, contents: key.withBytes { Data($0) }, attributes: [.posixPermissions: 0o600])
        return path
    }

    private func sqlcipher(_ arguments: [String]) throws -> String {
        let run = try ChildProcess.run("/usr/bin/env", ["python3", Self.script] + arguments, timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderr)
        return run.stdout
    }

    /// Every row of every table as the interop script prints them, read by jobrun.
    private func dump(_ path: String, key: StoreKey) throws -> String {
        let box = try SqliteValueBox(path: path, options: .init(readOnly: true, key: key))
        var lines = ["integrity ok"]
        for table in try box.queryStrings("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name") {
            lines += try box.queryStrings("SELECT hex(key) || ':' || hex(value) FROM \"\(table)\" ORDER BY key").map { "\(table) \($0)" }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func fill(_ postbox: Postbox, count: Int) throws {
        try postbox.transactionSync { tx in
            try tx.messages.add((1...count).map { Message(id: MessageId(peerId: PeerId(1), id: Int32($0)), timestamp: Int32($0), text: "message \($0)") })
            for id in 1...50 { try tx.peers.set(Peer(id: PeerId(Int64(id)), category: .group, title: "peer \(id)")) }
        }
    }

    func testSQLCipherReadsAStoreJobrunWroteWithItsWAL() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let key = StoreKey.random()
        try fill(try Postbox(path: path, key: key), count: 2000)
        do {
            // A second, small commit stays in the WAL the close keeps.
            let postbox = try Postbox(path: path, key: key)
            try postbox.transactionSync { try $0.peers.set(Peer(id: PeerId(999), category: .contact, title: "in the WAL")) }
        }
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        XCTAssertGreaterThan(walBytes, 32, "the last commit is in the WAL")
        let expected = try dump(path, key: key)
        XCTAssertTrue(expected.contains(Data("in the WAL".utf8).map { String(format: "%02X", $0) }.joined()))
        XCTAssertEqual(try sqlcipher(["dump", keyFile(key, in: dir), path]), expected)
    }

    func testSQLCipherReadsTheCommitsOfAKilledWriter() throws {
        let store = TestStore(.encryptedSqlite)
        try store.killWriterMidTransaction(rows: 20_000)
        let out = try sqlcipher(["dump", keyFile(store.key!, in: store.directory), store.identity])
        XCTAssertTrue(out.hasPrefix("integrity ok\n"), out)
        XCTAssertTrue(out.contains(Data("committed before".utf8).map { String(format: "%02X", $0) }.joined()), "the committed peer is read")
        XCTAssertEqual(out, try dump(store.identity, key: store.key!))
    }

    func testJobrunReadsAStoreSQLCipherWrote() throws {
        for leaveWAL in [false, true] {
            let dir = TemporaryDirectory()
            let path = dir.file("db.sqlite")
            let key = StoreKey.random()
            _ = try sqlcipher(["write", keyFile(key, in: dir), path, "3000", "written by sqlcipher"] + (leaveWAL ? ["--leave-wal"] : []))
            if leaveWAL {
                XCTAssertGreaterThan((try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0, 32)
            }
            XCTAssertEqual(try SqliteValueBox.isEncrypted(path: path), true)
            let box = try SqliteValueBox(path: path, options: .init(key: key))
            let ints = ValueBoxTable(id: 100, keyType: .int64)
            let blobs = ValueBoxTable(id: 101, keyType: .binary)
            XCTAssertEqual(try box.count(ints, .all), 3000, "leaveWAL \(leaveWAL)")
            XCTAssertEqual(try box.count(blobs, .all), 3000)
            XCTAssertEqual(try box.get(ints, key: ValueBoxKey(Int64(2999))), Data("written by sqlcipher 2999".utf8))
            var key8 = [UInt8](repeating: 0, count: 8)
            key8[7] = 7
            XCTAssertEqual(try box.get(blobs, key: ValueBoxKey(bytes: key8)), Data("written by sqlcipher 7".utf8))
            XCTAssertEqual(try box.integrityCheck(), ["ok"])
            // jobrun writes on, and SQLCipher still reads the file.
            try box.begin()
            try box.set(ints, key: ValueBoxKey(Int64(5000)), value: Data("written by jobrun".utf8))
            try box.commit()
            box.close()
            XCTAssertTrue(
                try sqlcipher(["dump", dir.file("key"), path]).contains(
                    "t100 " + Data("5000".utf8).map { String(format: "%02X", $0) }.joined() + ":"
                        + Data("written by jobrun".utf8).map { String(format: "%02X", $0) }.joined()))
        }
    }
}
