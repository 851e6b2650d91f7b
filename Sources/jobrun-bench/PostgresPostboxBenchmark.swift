import Foundation
import Postbox
import PostboxPostgres
import PostgresNIO

/// Postbox on PostgreSQL against the same statements issued directly through postgres-nio on
/// one connection: what a careful hand-written client of the same layout does (the store's
/// advisory lock and version row, one batched upsert per commit, the id-index lookup before
/// each insert, one query per point read, one query per scan).
struct PostgresPostboxBenchmark {
    var messages: Int
    var smallTransactions: Int
    var reads: Int
    var peers = 10
    var endpoint: PostgresEndpoint
    /// Also Postbox with every value sealed (`ValueCipher`, as on an encrypted root) against
    /// Postbox with values in clear.
    var sealed = false

    /// Sealed values' time over clear ones', at most.
    static let sealedTarget = 1.15

    func run() throws {
        try runAgainstRaw()
        if sealed { try runSealedAgainstClear() }
    }

    private func runAgainstRaw() throws {
        try PostgresValueBox.dropStore(endpoint: endpoint, schema: "bench_postbox")
        try PostgresValueBox.dropStore(endpoint: endpoint, schema: "bench_raw")
        defer {
            try? PostgresValueBox.dropStore(endpoint: endpoint, schema: "bench_postbox")
            try? PostgresValueBox.dropStore(endpoint: endpoint, schema: "bench_raw")
        }
        var table = BenchTable(
            title: "Postbox on PostgreSQL vs the same statements through postgres-nio (\(endpoint))",
            columns: ["workload", "raw (ops/s)", "postbox (ops/s)", "postbox/raw time", "target"])
        let raw = try RawPostgres(endpoint: endpoint)
        defer { raw.close() }
        let postbox = try Postbox(valueBox: PostgresValueBox(endpoint: endpoint, schema: "bench_postbox"), name: "postgres:bench_postbox")
        let workloads = PostboxWorkloads(messages: messages, smallTransactions: smallTransactions, reads: reads, peers: peers)
        for w in try workloads.run(raw: raw, postbox: postbox) { table.add(row(w.name, w.ops, w.raw, w.postbox)) }
        table.print()
    }

    /// The same workloads on two Postbox stores of the server, one sealing its values under a
    /// root key and one keeping them in clear: two rounds on new schemas, in both orders, each
    /// side's faster round reported.
    private func runSealedAgainstClear() throws {
        let schemas = ["bench_clear", "bench_sealed"]
        defer { for schema in schemas { try? PostgresValueBox.dropStore(endpoint: endpoint, schema: schema) } }
        let cipher = try ValueCipher(storeKey: StoreKey.random())
        let workloads = PostboxWorkloads(messages: messages, smallTransactions: smallTransactions, reads: reads, peers: peers)
        var best: [PostboxWorkloads.Timing] = []
        for round in 0..<2 {
            for schema in schemas { try PostgresValueBox.dropStore(endpoint: endpoint, schema: schema) }
            let clear = try Postbox(valueBox: PostgresValueBox(endpoint: endpoint, schema: schemas[0]), name: "postgres:" + schemas[0])
            let sealedBox = try Postbox(valueBox: PostgresValueBox(endpoint: endpoint, schema: schemas[1], cipher: cipher), name: "postgres:" + schemas[1])
            let timings = try workloads.run(raw: PostboxSide(postbox: clear), product: PostboxSide(postbox: sealedBox), peerFirst: round == 0)
            best = PostboxWorkloads.faster(best, timings)
        }
        var table = BenchTable(
            title: "Postbox on PostgreSQL: values sealed (AES-256-GCM, a fresh nonce per value) vs in clear (\(endpoint))",
            columns: ["workload", "clear (ops/s)", "sealed (ops/s)", "sealed/clear time", "target"])
        for w in best {
            let ratio = w.postbox / w.raw
            BenchRatios.record(
                "postbox-postgres-sealed", w.name, product: fmt(Double(w.ops) / w.postbox, 0) + " ops/s sealed",
                peer: fmt(Double(w.ops) / w.raw, 0) + " ops/s clear", ratio: w.raw / w.postbox, target: 1 / Self.sealedTarget)
            table.add([
                w.name, fmt(Double(w.ops) / w.raw, 0), fmt(Double(w.ops) / w.postbox, 0), fmt(ratio) + "×",
                ratio <= Self.sealedTarget ? "≤\(fmt(Self.sealedTarget))× ok" : "≤\(fmt(Self.sealedTarget))× MISSED",
            ])
        }
        table.print()
    }

    private func row(_ name: String, _ ops: Int, _ raw: Double, _ box: Double) -> [String] {
        let ratio = box / raw
        BenchRatios.record(
            "postbox-postgres", name, product: fmt(Double(ops) / box, 0) + " ops/s", peer: fmt(Double(ops) / raw, 0) + " ops/s raw postgres-nio",
            ratio: raw / box, target: 1 / 1.3)
        return [name, fmt(Double(ops) / raw, 0), fmt(Double(ops) / box, 0), fmt(ratio) + "×", ratio <= 1.3 ? "≤1.3× ok" : "≤1.3× MISSED"]
    }
}

/// The hand-written peer: postgres-nio's `PostgresConnection`, one statement per round trip.
final class RawPostgres {
    private let connection: PostgresConnection
    private let logger = Logger(label: "bench.raw-postgres")
    private let schema = "\"bench_raw\""
    private static let lockClass: Int32 = 0x5642_0002

    init(endpoint: PostgresEndpoint) throws {
        connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: try endpoint.configuration(), id: 1, logger: logger
        ).wait()
        for sql in [
            "CREATE SCHEMA \(schema)",
            "CREATE TABLE \(schema).valuebox_version (id int PRIMARY KEY, version int8 NOT NULL)",
            "INSERT INTO \(schema).valuebox_version VALUES (1, 0)",
            "CREATE TABLE \(schema).t1 (key int8 PRIMARY KEY, value bytea NOT NULL)",
            "CREATE TABLE \(schema).t2 (key bytea PRIMARY KEY, value bytea NOT NULL)",
            "CREATE TABLE \(schema).t3 (key bytea PRIMARY KEY, value bytea NOT NULL)",
        ] { try q(sql) }
    }

    func close() { try? connection.close().wait() }

    @discardableResult
    private func q(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> [PostgresRow] {
        Array(try connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait().rows)
    }

    private func beginWrite() throws {
        try q("BEGIN ISOLATION LEVEL READ COMMITTED")
        try q("SELECT pg_advisory_xact_lock(\(Self.lockClass), 1)")
        try q("SELECT version FROM \(schema).valuebox_version WHERE id = 1")
    }

    private func beginRead() throws {
        try q("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try q("SELECT version FROM \(schema).valuebox_version WHERE id = 1")
    }

    private static func be64(_ b: inout [UInt8], _ o: Int, _ v: Int64) {
        let u = UInt64(bitPattern: v) ^ (1 << 63)
        for i in 0..<8 { b[o + i] = UInt8(truncatingIfNeeded: u >> (56 - 8 * UInt64(i))) }
    }

    private static func be32(_ b: inout [UInt8], _ o: Int, _ v: Int32) {
        let u = UInt32(bitPattern: v) ^ (1 << 31)
        for i in 0..<4 { b[o + i] = UInt8(truncatingIfNeeded: u >> (24 - 8 * UInt32(i))) }
    }

    /// One statement: the pending rows of t2 and t3, and (at commit) the version bump.
    private func flush(_ t2: inout [(ByteBuffer, ByteBuffer)], _ t3: inout [(ByteBuffer, ByteBuffer)], bump: Bool) throws {
        var binds = PostgresBindings()
        binds.append(t2.map(\.0))
        binds.append(t2.map(\.1))
        binds.append(t3.map(\.0))
        binds.append(t3.map(\.1))
        let version =
            bump ? ", v AS (UPDATE \(schema).valuebox_version SET version = version + 1 WHERE id = 1 RETURNING version) SELECT version FROM v" : " SELECT 1"
        try q(
            "WITH u2 AS (INSERT INTO \(schema).t2 (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (key) DO UPDATE SET value = excluded.value),"
                + " u3 AS (INSERT INTO \(schema).t3 (key, value) SELECT * FROM unnest($3::bytea[], $4::bytea[]) ON CONFLICT (key) DO UPDATE SET value = excluded.value)"
                + version, binds)
        t2.removeAll(keepingCapacity: true)
        t3.removeAll(keepingCapacity: true)
    }

    func bulkInsert(messages: Int, peers: Int) throws {
        try beginWrite()
        var t2: [(ByteBuffer, ByteBuffer)] = []
        var t3: [(ByteBuffer, ByteBuffer)] = []
        var key = [UInt8](repeating: 0, count: 20)
        var idKey = [UInt8](repeating: 0, count: 16)
        for i in 0..<messages {
            let (peer, id) = (Int64(i % peers + 1), Int32(i / peers + 1))
            let ts = 1_600_000_000 + id
            Self.be64(&key, 0, peer); Self.be32(&key, 8, 0); Self.be32(&key, 12, ts); Self.be32(&key, 16, id)
            Self.be64(&idKey, 0, peer); Self.be32(&idKey, 8, 0); Self.be32(&idKey, 12, id)
            var lookup = PostgresBindings()
            lookup.append(ByteBuffer(bytes: idKey))
            _ = try q("SELECT value FROM \(schema).t3 WHERE key = $1", lookup)
            var value: [UInt8] = []
            withUnsafeBytes(of: peer) { value += $0 }
            withUnsafeBytes(of: id) { value += $0 }
            withUnsafeBytes(of: ts) { value += $0 }
            value += benchText(i).utf8
            t2.append((ByteBuffer(bytes: key), ByteBuffer(bytes: value)))
            t3.append((ByteBuffer(bytes: idKey), ByteBuffer(bytes: withUnsafeBytes(of: ts) { Array($0) })))
            if t2.count >= 10_000 { try flush(&t2, &t3, bump: false) }
        }
        try flush(&t2, &t3, bump: true)
        try q("COMMIT")
    }

    func smallTransactions(_ n: Int) throws {
        for i in 0..<n {
            try beginWrite()
            var value: [UInt8] = []
            withUnsafeBytes(of: Int64(i)) { value += $0 }
            value += "peer \(i)".utf8
            var binds = PostgresBindings()
            binds.append([Int64(i)])
            binds.append([ByteBuffer(bytes: value)])
            try q(
                "WITH u1 AS (INSERT INTO \(schema).t1 (key, value) SELECT * FROM unnest($1::int8[], $2::bytea[]) ON CONFLICT (key) DO UPDATE SET value = excluded.value),"
                    + " v AS (UPDATE \(schema).valuebox_version SET version = version + 1 WHERE id = 1 RETURNING version) SELECT version FROM v", binds)
            try q("COMMIT")
        }
    }

    func pointReads(_ ids: [(Int64, Int32)]) throws -> Int {
        try beginRead()
        var idKey = [UInt8](repeating: 0, count: 16)
        var key = [UInt8](repeating: 0, count: 20)
        var found = 0
        for (peer, id) in ids {
            Self.be64(&idKey, 0, peer); Self.be32(&idKey, 8, 0); Self.be32(&idKey, 12, id)
            var lookup = PostgresBindings()
            lookup.append(ByteBuffer(bytes: idKey))
            guard let cell = try q("SELECT value FROM \(schema).t3 WHERE key = $1", lookup).first?.first, let tsBytes = cell.bytes else { continue }
            let ts = tsBytes.withUnsafeReadableBytes { $0.loadUnaligned(as: Int32.self) }
            Self.be64(&key, 0, peer); Self.be32(&key, 8, 0); Self.be32(&key, 12, ts); Self.be32(&key, 16, id)
            var get = PostgresBindings()
            get.append(ByteBuffer(bytes: key))
            if let v = try q("SELECT value FROM \(schema).t2 WHERE key = $1", get).first?.first?.bytes {
                let ok = v.withUnsafeReadableBytes { RawMessage($0.baseAddress, $0.count).map { !$0.text.isEmpty } ?? false }
                if ok { found += 1 }
            }
        }
        try q("COMMIT")
        return found
    }

    func scan(peer: Int64) throws -> Int {
        var lower = [UInt8](repeating: 0, count: 12)
        Self.be64(&lower, 0, peer); Self.be32(&lower, 8, 0)
        var upper = lower
        Self.be32(&upper, 8, 1)
        try beginRead()
        var binds = PostgresBindings()
        binds.append(ByteBuffer(bytes: lower))
        binds.append(ByteBuffer(bytes: upper))
        var n = 0
        for row in try q("SELECT key, value FROM \(schema).t2 WHERE key >= $1 AND key < $2 ORDER BY key ASC", binds) {
            var cells = row.makeIterator()
            _ = cells.next()
            if let v = cells.next()?.bytes, v.withUnsafeReadableBytes({ RawMessage($0.baseAddress, $0.count)?.timestamp ?? 0 }) > 0 { n += 1 }
        }
        try q("COMMIT")
        return n
    }
}
