import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// What only the PostgreSQL engine has to prove on top of the shared suites: one writer per
/// store across connections, reader snapshots, the version signal, and clear errors.
final class PostgresValueBoxTests: XCTestCase {
    let binary = ValueBoxTable(id: 100, keyType: .binary)
    let ints = ValueBoxTable(id: 101, keyType: .int64)

    private func box(_ store: TestStore, readOnly: Bool = false) throws -> PostgresValueBox {
        try PostgresValueBox(endpoint: TestStore.endpoint(), schema: store.name, readOnly: readOnly)
    }

    func testKeysOrderAsMemcmpOnBothEngines() throws {
        let keys: [[UInt8]] = [[], [0x00], [0x7f], [0x7f, 0x00], [0x80], [0xff], [0xff, 0xff], [0x01, 0x80, 0x00]]
        var orders: [StoreEngine: [[UInt8]]] = [:]
        try forEachEngine { store in
            let vb = try store.valueBox()
            try vb.begin()
            for k in keys.reversed() { try vb.set(binary, key: ValueBoxKey(bytes: k), value: Data(k)) }
            try vb.commit()
            var seen: [[UInt8]] = []
            try vb.scan(binary) { key, value in
                XCTAssertEqual(Data(key.bytes), value)
                seen.append(key.bytes)
                return true
            }
            orders[store.engine] = seen
        }
        let expected = keys.map { ValueBoxKey(bytes: $0) }.sorted().map(\.bytes)
        XCTAssertEqual(orders[.sqlite], expected)
        XCTAssertEqual(orders[.postgres], expected, "bytea orders byte-wise, unsigned, a prefix first")
    }

    func testOneWriterAtATimeAndReadersKeepTheirSnapshot() throws {
        let store = TestStore(.postgres)
        let a = try box(store)
        let b = try box(store)
        let reader = try box(store)
        try a.begin()
        try a.set(ints, key: ValueBoxKey(Int64(1)), value: Data([1]))
        try a.commit()

        try reader.beginRead()
        XCTAssertEqual(try reader.get(ints, key: ValueBoxKey(Int64(1))), Data([1]))

        try a.begin()
        try a.set(ints, key: ValueBoxKey(Int64(1)), value: Data([2]))
        // b's begin must wait for a's commit: the store's writer lock.
        let bStarted = DispatchSemaphore(value: 0)
        let bBegan = Locked(false)
        let bSaw = Locked<Data?>(nil)
        let bDone = Locked(false)
        let bBox = Locked(b)
        let ints = self.ints
        let thread = Thread {
            bStarted.signal()
            do {
                let b = bBox.get()
                try b.begin()
                bBegan.set(true)
                bSaw.set(try b.get(ints, key: ValueBoxKey(Int64(1))))
                try b.set(ints, key: ValueBoxKey(Int64(1)), value: Data([3]))
                try b.commit()
                bDone.set(true)
            } catch {
                XCTFail("b: \(error)")
            }
        }
        thread.start()
        bStarted.wait()
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertFalse(bBegan.get(), "a second writer waits while the first holds the store")
        try a.commit()
        let deadline = Date().addingTimeInterval(10)
        while !bBegan.get() && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(bBegan.get(), "the second writer starts once the first commits")
        while bSaw.get() == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(bSaw.get(), Data([2]), "the second writer sees the first one's commit")

        XCTAssertEqual(try reader.get(ints, key: ValueBoxKey(Int64(1))), Data([1]), "a reader keeps its snapshot")
        try reader.commit()
        while !bDone.get() && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        try reader.beginRead()
        XCTAssertEqual(try reader.get(ints, key: ValueBoxKey(Int64(1))), Data([3]))
        try reader.commit()
    }

    func testDataVersionMovesOnlyForAnotherConnectionsCommit() throws {
        let store = TestStore(.postgres)
        let a = try box(store)
        let b = try box(store)
        let a0 = try a.dataVersion()
        let b0 = try b.dataVersion()
        try a.begin()
        XCTAssertEqual(try a.dataVersion(), a0)
        try a.set(binary, key: ValueBoxKey(string: "k"), value: Data([1]))
        try a.commit()
        try a.beginRead()
        XCTAssertEqual(try a.dataVersion(), a0, "its own commit does not count")
        try a.commit()
        try b.beginRead()
        XCTAssertNotEqual(try b.dataVersion(), b0, "another connection's commit does")
        try b.commit()
        // A write transaction that wrote nothing does not move anyone's version.
        let b1 = try b.dataVersion()
        try a.begin()
        try a.commit()
        try b.beginRead()
        XCTAssertEqual(try b.dataVersion(), b1)
        try b.commit()
    }

    func testReadsInsideAWriteSeeItsPendingWrites() throws {
        let vb = try box(TestStore(.postgres))
        try vb.begin()
        for i in Int64(1)...10 { try vb.set(ints, key: ValueBoxKey(i), value: Data([UInt8(i)])) }
        try vb.remove(ints, key: ValueBoxKey(Int64(3)))
        XCTAssertEqual(try vb.get(ints, key: ValueBoxKey(Int64(2))), Data([2]))
        XCTAssertNil(try vb.get(ints, key: ValueBoxKey(Int64(3))))
        XCTAssertEqual(try vb.count(ints), 9)
        try vb.set(ints, key: ValueBoxKey(Int64(3)), value: Data([33]))
        try vb.removeRange(ints, ValueBoxRange(lower: ValueBoxKey(Int64(8)), lowerInclusive: true, upper: nil, upperInclusive: true))
        var keys: [Int64] = []
        try vb.rangeKeys(ints, .all, limit: .max) {
            keys.append($0.getInt64(0))
            return true
        }
        XCTAssertEqual(keys, [1, 2, 3, 4, 5, 6, 7])
        vb.rollback()
        XCTAssertEqual(try vb.count(ints), 0, "a rollback leaves nothing, flushed rows included")
    }

    func testLongScansPageThroughInOrderBothWays() throws {
        let vb = try box(TestStore(.postgres))
        try vb.begin()
        for i in Int64(-5000)..<5000 { try vb.set(ints, key: ValueBoxKey(i), value: Data()) }
        try vb.commit()
        var up: [Int64] = []
        try vb.rangeKeys(ints, .all, limit: .max) {
            up.append($0.getInt64(0))
            return true
        }
        XCTAssertEqual(up, Array(-5000..<5000))
        var down: [Int64] = []
        try vb.rangeKeys(ints, .between(ValueBoxKey(Int64(4000)), ValueBoxKey(Int64(-4000))), limit: 7000) {
            down.append($0.getInt64(0))
            return true
        }
        XCTAssertEqual(down, Array((-3000...3999).reversed()))
    }

    func testAStoreCarriesOnAfterTheServerRestarts() throws {
        let server = try PostgresServer()
        let endpoint = PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: "postgres")
        let postbox = try Postbox(valueBox: PostgresValueBox(endpoint: endpoint, schema: "restart"), name: "postgres:restart")
        try postbox.transactionSync { try $0.peers.set(Peer(id: PeerId(1), category: .group, title: "before")) }
        try server.restart()
        // The old session is gone: at most the first transaction fails (temporary), then the
        // store reconnects and everything committed before the restart is there.
        var title: String?
        for _ in 0..<3 where title == nil {
            title = try? postbox.readSync { try $0.peers.get(PeerId(1))?.title }
        }
        XCTAssertEqual(title, "before")
        try postbox.transactionSync { try $0.peers.set(Peer(id: PeerId(2), category: .group, title: "after")) }
        XCTAssertEqual(try postbox.readSync { try $0.peers.get(PeerId(2))?.title }, "after")
    }

    func testAStatementWithoutAnAnswerFailsAtTheDeadlineAndTheStoreCarriesOn() throws {
        let store = TestStore(.postgres)
        let holder = try box(store)
        let waiting = try PostgresValueBox(endpoint: TestStore.endpoint(), schema: store.name, statementTimeout: 1)
        // Another writer holds the store's lock: the next writer's statement gets no answer.
        try holder.begin()
        try holder.set(ints, key: ValueBoxKey(Int64(1)), value: Data([1]))
        let started = Date()
        XCTAssertThrowsError(try waiting.begin()) { error in
            XCTAssertTrue("\(error)".contains("57014") && "\(error)".contains("no answer"), "\(error)")
        }
        let waited = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(waited, 0.9, "the deadline, not an error of its own")
        XCTAssertLessThan(waited, 30, "the call ends at its deadline")
        try holder.commit()
        // The abandoned backend may still take the lock before the server notices its client is
        // gone (`client_connection_check_interval`); a writer without a deadline waits that out.
        let next = try box(store)
        try next.begin()
        try next.set(ints, key: ValueBoxKey(Int64(2)), value: Data([2]))
        try next.commit()
        // The timed-out box opens a new connection at its next transaction and sees both commits.
        try waiting.begin()
        XCTAssertEqual(try waiting.get(ints, key: ValueBoxKey(Int64(1))), Data([1]))
        XCTAssertEqual(try waiting.get(ints, key: ValueBoxKey(Int64(2))), Data([2]))
        try waiting.commit()
    }

    func testBadStoreNamesAndMissingStoresAreClearErrors() throws {
        let endpoint = try TestStore.endpoint()
        XCTAssertThrowsError(try PostgresValueBox(endpoint: endpoint, schema: "Robert'); DROP")) {
            XCTAssertTrue("\($0)".contains("invalid store name"), "\($0)")
        }
        XCTAssertThrowsError(try PostgresValueBox(endpoint: endpoint, schema: "nothing_here", readOnly: true)) {
            XCTAssertTrue("\($0)".contains("postgres:nothing_here") && "\($0)".contains("no store here yet"), "\($0)")
        }
        let wrong = PostgresEndpoint(address: .unixSocket(path: "/nonexistent/.s.PGSQL.5432"), username: "u", password: "hunter2-secret", database: "d")
        XCTAssertThrowsError(try PostgresValueBox(endpoint: wrong, schema: "s1")) {
            XCTAssertFalse("\($0)".contains("hunter2-secret"), "errors never carry the password")
            XCTAssertTrue("\($0)".contains("postgres:s1"), "\($0)")
        }
        XCTAssertFalse("\(wrong)".contains("hunter2-secret"))
    }
}

/// A value shared between the test and a thread it starts.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
    func set(_ newValue: Value) {
        lock.lock()
        value = newValue
        lock.unlock()
    }
}
