import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

final class ValueBoxTests: XCTestCase {
    let binary = ValueBoxTable(id: 100, keyType: .binary)
    let ints = ValueBoxTable(id: 101, keyType: .int64)

    private func messageKey(peer: Int64, ns: Int32, ts: Int32, id: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 20)
        k.setInt64(0, value: peer)
        k.setInt32(8, value: ns)
        k.setInt32(12, value: ts)
        k.setInt32(16, value: id)
        return k
    }

    private func write(_ vb: any ValueBox, _ body: () throws -> Void) throws {
        try vb.begin()
        try body()
        try vb.commit()
    }

    func testGetSetRemoveExists() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            let key = ValueBoxKey(string: "alpha")
            XCTAssertNil(try vb.get(binary, key: key), "missing table reads as empty")
            try write(vb) {
                try vb.set(binary, key: key, value: Data([1, 2, 3]))
                try vb.set(ints, key: ValueBoxKey(Int64(-5)), value: Data([9]))
            }
            XCTAssertEqual(try vb.get(binary, key: key), Data([1, 2, 3]))
            XCTAssertTrue(try vb.exists(binary, key: key))
            XCTAssertEqual(try vb.get(ints, key: ValueBoxKey(Int64(-5))), Data([9]))
            try write(vb) { try vb.set(binary, key: key, value: Data()) }
            XCTAssertEqual(try vb.get(binary, key: key), Data(), "an empty value is not a missing value")
            try write(vb) { try vb.remove(binary, key: key) }
            XCTAssertNil(try vb.get(binary, key: key))
            XCTAssertFalse(try vb.exists(binary, key: key))
        }
    }

    func testBatchedGetReturnsTheStoredKeysAndTheTransactionsOwnWrites() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            let (a, b, c) = (ValueBoxKey(string: "a"), ValueBoxKey(string: "b"), ValueBoxKey(string: "c"))
            XCTAssertEqual(try vb.get(binary, keys: [a, b]), [:], "missing table reads as empty")
            try write(vb) {
                try vb.set(binary, key: a, value: Data([1]))
                try vb.set(binary, key: b, value: Data())
                for i in 0..<2000 { try vb.set(ints, key: ValueBoxKey(Int64(i - 1000)), value: Data([UInt8(truncatingIfNeeded: i)])) }
            }
            XCTAssertEqual(try vb.get(binary, keys: []), [:])
            XCTAssertEqual(try vb.get(binary, keys: [a, c, b, a]), [a: Data([1]), b: Data()], "missing keys absent, repeats once, empty kept")
            let asked = (0..<3000).map { ValueBoxKey(Int64($0 - 1500)) }
            let got = try vb.get(ints, keys: asked)
            XCTAssertEqual(got.count, 2000)
            XCTAssertEqual(got[ValueBoxKey(Int64(-1000))], Data([0]))
            XCTAssertEqual(got[ValueBoxKey(Int64(999))], Data([UInt8(truncatingIfNeeded: 1999)]))
            XCTAssertNil(got[ValueBoxKey(Int64(1000))])
            // Inside a write transaction: its own sets and removals, not yet sent, win.
            try vb.begin()
            try vb.set(binary, key: c, value: Data([3]))
            try vb.remove(binary, key: a)
            try vb.set(binary, key: b, value: Data([2]))
            XCTAssertEqual(try vb.get(binary, keys: [a, b, c]), [b: Data([2]), c: Data([3])])
            vb.rollback()
            XCTAssertEqual(try vb.get(binary, keys: [a, b, c]), [a: Data([1]), b: Data()], "the rolled-back writes are gone")
        }
    }

    func testKeysUnderManyPrefixesComeGroupedInOrderAndSeeTheTransactionsOwnWrites() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            func key(_ prefix: UInt8, _ rest: String) -> ValueBoxKey { ValueBoxKey(bytes: [prefix]) + ValueBoxKey(string: rest) }
            let (p1, p2, p3, ff) = (ValueBoxKey(bytes: [1]), ValueBoxKey(bytes: [2]), ValueBoxKey(bytes: [3]), ValueBoxKey(bytes: [0xff]))
            XCTAssertEqual(try vb.keys(binary, prefixes: [p1]), [p1: []], "missing table reads as empty")
            try write(vb) {
                for rest in ["c", "a", "b"] { try vb.set(binary, key: key(1, rest), value: Data()) }
                try vb.set(binary, key: key(2, "z"), value: Data())
                // Just outside the prefixes: [0] sorts before [1], [4] after [3].
                try vb.set(binary, key: key(0, "out"), value: Data())
                try vb.set(binary, key: key(4, "out"), value: Data())
                try vb.set(binary, key: key(0xff, "top"), value: Data())
            }
            let found = try vb.keys(binary, prefixes: [p2, p3, p1, p2, ff])
            XCTAssertEqual(found[p1], [key(1, "a"), key(1, "b"), key(1, "c")], "in key order")
            XCTAssertEqual(found[p2], [key(2, "z")], "a repeated prefix once")
            XCTAssertEqual(found[p3], [], "a prefix with no keys is empty, not missing")
            XCTAssertEqual(found[ff], [key(0xff, "top")], "an all-0xff prefix has no upper bound and is still read")
            XCTAssertEqual(found.count, 4)
            XCTAssertEqual(try vb.keys(binary, prefixes: []), [:])
            // Inside a write transaction the pending writes count, as they do for `get`.
            try vb.begin()
            try vb.set(binary, key: key(3, "new"), value: Data())
            try vb.remove(binary, key: key(1, "b"))
            let pending = try vb.keys(binary, prefixes: [p1, p3])
            try vb.commit()
            XCTAssertEqual(pending[p1], [key(1, "a"), key(1, "c")])
            XCTAssertEqual(pending[p3], [key(3, "new")])
        }
    }

    func testCompositeKeysScanPeerNamespaceTimeIdOrder() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            var expected: [ValueBoxKey] = []
            try write(vb) {
                for peer in [Int64(-3), 0, 7, 1 << 40] {
                    for ns in [Int32(0), 1] {
                        for ts in [Int32(-100), 5, 1_700_000_000] {
                            for id in [Int32(2), 1] {
                                let k = messageKey(peer: peer, ns: ns, ts: ts, id: id)
                                expected.append(k)
                                try vb.set(binary, key: k, value: Data([UInt8(truncatingIfNeeded: id)]))
                            }
                        }
                    }
                }
            }
            var seen: [(Int64, Int32, Int32, Int32)] = []
            try vb.scan(binary) { key, _ in
                seen.append((key.getInt64(0), key.getInt32(8), key.getInt32(12), key.getInt32(16)))
                return true
            }
            let sortedTuples = seen.sorted { ($0.0, $0.1, $0.2, $0.3) < ($1.0, $1.1, $1.2, $1.3) }
            XCTAssertEqual(seen.count, expected.count)
            XCTAssertTrue(zip(seen, sortedTuples).allSatisfy { $0 == $1 }, "scan order follows peer → namespace → timestamp → id, negatives first")

            // One peer+namespace, descending, via a prefix.
            var prefix = ValueBoxKey(length: 12)
            prefix.setInt64(0, value: 7)
            prefix.setInt32(8, value: 1)
            var times: [Int32] = []
            try vb.range(binary, .prefix(prefix, descending: true), limit: .max) { key, _ in
                times.append(key.getInt32(12))
                return true
            }
            XCTAssertEqual(times, [1_700_000_000, 1_700_000_000, 5, 5, -100, -100])
        }
    }

    func testRangeIsExclusiveAndDirectional() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            try write(vb) { for i in Int64(1)...10 { try vb.set(ints, key: ValueBoxKey(i), value: Data([UInt8(i)])) } }
            var up: [Int64] = []
            try vb.range(ints, start: ValueBoxKey(Int64(2)), end: ValueBoxKey(Int64(6))) { k, _ in
                up.append(k.getInt64(0)); return true
            }
            XCTAssertEqual(up, [3, 4, 5])
            var down: [Int64] = []
            try vb.range(ints, start: ValueBoxKey(Int64(6)), end: ValueBoxKey(Int64(2))) { k, _ in
                down.append(k.getInt64(0)); return true
            }
            XCTAssertEqual(down, [5, 4, 3])
            var limited: [Int64] = []
            try vb.range(ints, start: ValueBoxKey(Int64(0)), end: ValueBoxKey(Int64(11)), limit: 2) { k, _ in
                limited.append(k.getInt64(0)); return true
            }
            XCTAssertEqual(limited, [1, 2])
        }
    }

    func testEarlyStopAndFilteredRange() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            try write(vb) { for i in Int64(1)...100 { try vb.set(ints, key: ValueBoxKey(i), value: Data()) } }
            var visited = 0
            try vb.scan(ints) { _, _ in
                visited += 1; return visited < 7
            }
            XCTAssertEqual(visited, 7, "returning false stops the scan")

            var evens: [Int64] = []
            try vb.filteredRange(ints, start: ValueBoxKey(Int64(0)), end: ValueBoxKey(Int64(1000)), limit: 5) { k, _ in
                let v = k.getInt64(0)
                if v % 2 == 0 { evens.append(v); return .accept }
                return .skip
            }
            XCTAssertEqual(evens, [2, 4, 6, 8, 10], "skipped rows do not count against the limit")
            var stoppedAt: Int64 = 0
            try vb.filteredRange(ints, start: ValueBoxKey(Int64(0)), end: ValueBoxKey(Int64(1000)), limit: 100) { k, _ in
                stoppedAt = k.getInt64(0)
                return k.getInt64(0) == 13 ? .stop : .accept
            }
            XCTAssertEqual(stoppedAt, 13)
        }
    }

    func testCountAndRemoveRange() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            try write(vb) {
                for peer in Int64(1)...3 { for id in Int32(1)...50 { try vb.set(binary, key: messageKey(peer: peer, ns: 0, ts: id, id: id), value: Data()) } }
            }
            XCTAssertEqual(try vb.count(binary), 150)
            var peer2 = ValueBoxKey(length: 8)
            peer2.setInt64(0, value: 2)
            XCTAssertEqual(try vb.count(binary, .prefix(peer2)), 50)
            XCTAssertEqual(try vb.count(binary, start: messageKey(peer: 2, ns: 0, ts: 10, id: 10), end: messageKey(peer: 2, ns: 0, ts: 20, id: 20)), 9)
            try write(vb) { try vb.removeRange(binary, start: messageKey(peer: 2, ns: 0, ts: 10, id: 10), end: messageKey(peer: 2, ns: 0, ts: 20, id: 20)) }
            XCTAssertEqual(try vb.count(binary, .prefix(peer2)), 39, "removeRange is inclusive at both ends")
            try write(vb) { try vb.removeRange(binary, .prefix(peer2)) }
            XCTAssertEqual(try vb.count(binary), 100)
            XCTAssertEqual(try vb.count(binary, .prefix(peer2)), 0)
        }
    }

    func testRollbackDiscardsWrites() throws {
        try forEachEngine { store in
            let vb = try store.valueBox()
            try vb.begin()
            try vb.set(ints, key: ValueBoxKey(Int64(1)), value: Data([1]))
            vb.rollback()
            XCTAssertNil(try vb.get(ints, key: ValueBoxKey(Int64(1))))
        }
    }

    func testATableAnotherConnectionCreatesLaterIsRead() throws {
        try forEachEngine { store in
            let reader = try store.valueBox()
            let key = ValueBoxKey(Int64(7))
            // Asked twice while the table is missing: a missing table is not remembered as missing.
            XCTAssertNil(try reader.get(ints, key: key))
            XCTAssertEqual(try reader.count(ints), 0)
            let writer = try store.valueBox()
            try write(writer) { try writer.set(ints, key: key, value: Data([7])) }
            XCTAssertEqual(try reader.get(ints, key: key), Data([7]), "the reader finds the table the writer created")
            XCTAssertEqual(try reader.count(ints), 1)
            if let sqlite = reader as? SqliteValueBox {
                XCTAssertEqual(try sqlite.estimatedPayload(ints).rows, 1)
            }
        }
    }

    func testReopenAfterCloseKeepsData() throws {
        try forEachEngine { store in
            do {
                let vb = try store.valueBox()
                try write(vb) { for i in Int64(0)..<1000 { try vb.set(ints, key: ValueBoxKey(i), value: Data("v\(i)".utf8)) } }
                (vb as? SqliteValueBox)?.close()
                (vb as? PostgresValueBox)?.close()
            }
            let vb = try store.valueBox()
            XCTAssertEqual(try vb.count(ints), 1000)
            XCTAssertEqual(try vb.get(ints, key: ValueBoxKey(Int64(999))), Data("v999".utf8))
            if let sqlite = vb as? SqliteValueBox {
                XCTAssertEqual(try sqlite.integrityCheck(), ["ok"])
                let attrs = try FileManager.default.attributesOfItem(atPath: store.identity)
                XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o600, "database files are 0600")
            }
        }
    }

    func testKeyHelpers() {
        var k = ValueBoxKey(length: 4)
        k.setInt32(0, value: -1)
        XCTAssertEqual(k.getInt32(0), -1)
        XCTAssertLessThan(ValueBoxKey(Int64(-1)), ValueBoxKey(Int64(0)), "sign bit flipped: negatives sort first")
        XCTAssertEqual(ValueBoxKey(bytes: [1, 0xff]).prefixUpperBound, ValueBoxKey(bytes: [2]))
        XCTAssertNil(ValueBoxKey(bytes: [0xff, 0xff]).prefixUpperBound)
        XCTAssertEqual(ValueBoxKey(bytes: [1, 0xff]).successor, ValueBoxKey(bytes: [2, 0]))
        XCTAssertEqual(ValueBoxKey(bytes: [2, 0]).predecessor, ValueBoxKey(bytes: [1, 0xff]))
        XCTAssertLessThan(ValueBoxKey(bytes: [1]), ValueBoxKey(bytes: [1, 0]), "a prefix sorts first")
    }

    func testReadOnlyOpenRefusesWrites() throws {
        try forEachEngine { store in
            do {
                let vb = try store.valueBox()
                try write(vb) { try vb.set(ints, key: ValueBoxKey(Int64(1)), value: Data([1])) }
            }
            let ro = try store.valueBox(readOnly: true)
            XCTAssertEqual(try ro.get(ints, key: ValueBoxKey(Int64(1))), Data([1]))
            XCTAssertThrowsError(try ro.begin()) { XCTAssertEqual($0 as? PostboxError, .readOnly(path: store.identity)) }
        }
    }
}
