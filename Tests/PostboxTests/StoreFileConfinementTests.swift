import Foundation
import Postbox
import TestSupport
import XCTest

/// SQLite's own opens of a store (the database, its WAL, its shared memory) follow the rule of
/// every path under the data root: a link, a FIFO, a hard-linked file or a file writable by
/// others is refused with an error naming it, and nothing outside is read, written or created.
final class StoreFileConfinementTests: XCTestCase {
    private var root: TemporaryDirectory!
    private var outside: TemporaryDirectory!
    private var path: String { root.file("db.sqlite") }
    private var victim: String { outside.file("victim.sqlite") }

    override func setUpWithError() throws {
        root = TemporaryDirectory()
        outside = TemporaryDirectory()
        // A real store outside the root: what a link would lead to.
        let store = try Postbox(path: victim, key: TestRoot.storeKey)
        try store.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .contact, title: "victim")) }
        _ = try store.compact()
    }

    /// Everything outside the root, name by name, with its bytes.
    private func outsideState() throws -> [String: Data] {
        var state: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: outside.path) {
            state[name] = FileManager.default.contents(atPath: outside.file(name)) ?? Data()
        }
        return state
    }

    private func assertRefused(_ named: String, key: StoreKey? = TestRoot.storeKey, file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try outsideState()
        let started = Date()
        XCTAssertThrowsError(try Postbox(path: path, key: key).readSync { try $0.peers.count() }, file: file, line: line) { error in
            guard case .unsafeFile(let refused, let reason) = error as? PostboxError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(refused, named, file: file, line: line)
            XCTAssertTrue(reason.contains(named), reason, file: file, line: line)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "refused at once, never blocked", file: file, line: line)
        XCTAssertEqual(try outsideState(), before, "nothing outside the root was touched", file: file, line: line)
    }

    func testALinkedDatabaseIsRefused() throws {
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: victim)
        try assertRefused(path)
        try assertRefused(path, key: StoreKey.random())
    }

    func testADanglingLinkIsRefusedAndNothingIsCreatedAtItsTarget() throws {
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: outside.file("new.sqlite"))
        try assertRefused(path)
        XCTAssertFalse(FileManager.default.fileExists(atPath: outside.file("new.sqlite")))
    }

    func testALinkedWALIsRefused() throws {
        for key in [nil, StoreKey.random()] {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
            try Postbox(path: path, key: key).transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .contact, title: "mine")) }
            try FileManager.default.removeItem(atPath: path + "-wal")
            try FileManager.default.removeItem(atPath: path + "-shm")
            try FileManager.default.createSymbolicLink(atPath: path + "-wal", withDestinationPath: victim)
            try assertRefused(path + "-wal", key: key)
        }
    }

    func testALinkedSharedMemoryFileIsRefused() throws {
        try Postbox(path: path, key: TestRoot.storeKey).transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .contact, title: "mine")) }
        try FileManager.default.removeItem(atPath: path + "-shm")
        try FileManager.default.createSymbolicLink(atPath: path + "-shm", withDestinationPath: victim)
        try assertRefused(path + "-shm")
    }

    func testAFIFOInPlaceOfTheDatabaseIsRefusedWithoutBlocking() throws {
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        try assertRefused(path)
    }

    func testAHardLinkedDatabaseIsRefused() throws {
        XCTAssertEqual(link(victim, path), 0)
        try assertRefused(path)
    }

    func testADatabaseWritableByOthersIsRefusedUnlessAllowed() throws {
        try Postbox(path: path, key: TestRoot.storeKey).transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .contact, title: "mine")) }
        XCTAssertEqual(chmod(path, 0o666), 0)
        try assertRefused(path)
        var options = SqliteValueBox.Options()
        options.allowInsecureFiles = true
        options.key = TestRoot.storeKey
        XCTAssertNoThrow(try SqliteValueBox(path: path, options: options))
    }
}
