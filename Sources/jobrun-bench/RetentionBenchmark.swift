import ArgumentParser
import CSQLite
import CloudCore
import CloudProtocol
import Foundation
import Jobs
import Postbox

struct RetentionBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "History retention vs the same deletes in raw SQL, space returned; the size-limit case checked.")
    @Option(help: "Messages in the store.") var messages = 2_000_000
    @Option(help: "Peers (messages are spread evenly).") var peers = 1_000
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-retention"
    @Flag(inversion: .prefixedNo, help: "After the timed trim, the peak-RSS and size-limit checks (several minutes).")
    var checks = true

    func run() throws {
        defer { WorkDirectory.remove(workDir) }
        try RetentionBenchmark(messages: messages, peers: peers, workDir: workDir, checks: checks).run()
    }
}

/// One side of the retention benchmark in a process of its own (so its peak RSS is its own and
/// the parent is "another writer"): `retention-pass <engine> <db> <keepPerPeer> [sizeLimit]`.
struct RetentionPassCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "retention-pass", abstract: "Internal: one side of `retention`.", shouldDisplay: false)
    @Argument var engine: String
    @Argument var db: String
    @Argument var keepPerPeer: Int
    @Argument var sizeLimit: Int64?

    func run() throws {
        CloudCoreTypes.registerAll()
        var removed = 0
        let seconds: Double
        let start = ProcessIO.now()
        if engine == "raw" {
            seconds = try measure { removed = try RawRetention(path: db).trim(keepPerPeer: keepPerPeer) }
        } else {
            let postbox = try Postbox(path: db)
            var policy = HistoryRetentionJob.defaultPolicy
            if let sizeLimit {
                policy.sizeLimit = sizeLimit
                policy.keepNewest = keepPerPeer
            } else {
                policy.maxMessagesPerPeer = keepPerPeer
                policy.keepNewest = min(100, keepPerPeer)
            }
            seconds = try measure { removed = try HistoryRetention(postbox: postbox, policy: policy).run().messagesRemoved }
        }
        print("\(seconds) \(removed) \(peakRSSMiB()) \(ProcessIO.now().since(start).fields)")
    }
}

/// Trimming half of a 2,000,000-message Postbox (1,000 peers, every other message with a photo
/// and its file reference) and returning the space, against the same deletes in raw SQL on a
/// copy of the same file; then the size-limit run with its checks.
struct RetentionBenchmark {
    var messages: Int
    var peers: Int
    var workDir: String
    var checks = true

    var perPeer: Int { messages / peers }

    func run() throws {
        CloudCoreTypes.registerAll()
        try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
        let source = workDir + "/source.sqlite"
        let built = try measure { try Self.build(path: source, peers: peers, perPeer: perPeer) }
        let sourceBytes = Self.size(source)
        print("store: \(peers * perPeer) messages over \(peers) peers, \(fmt(Double(sourceBytes) / 1_048_576, 1)) MiB (built in \(fmt(built, 1)) s)")
        try trimHalf(source)
        guard checks else { return }
        try peakRSSOnATenth()
        try checkSizeLimit(source, sourceBytes: sourceBytes)
    }

    /// Trims half of every peer's messages on copies of `source`, HistoryRetention against raw
    /// SQL, each side twice; the faster pass of each counts.
    func trimHalf(_ source: String) throws {
        let keep = perPeer / 2
        var table = BenchTable(
            title: "Trim \(peers * (perPeer - keep)) of \(peers * perPeer) messages and return the space",
            columns: [
                "round", "engine", "time (s)", "CPU (s)", "written: write calls (dirtied)", "read: read calls (from disk)", "removed", "file after (MiB)",
                "peak RSS (MiB)", "longest other-writer wait (ms)",
            ])
        // Each side runs twice, in the order raw, postbox, postbox, raw, and its faster pass
        // counts: a pass writes and syncs half a gigabyte, and on a shared disk one pass alone
        // varied from 11 to 24 s, more than the difference being measured.
        var times: [String: Double] = [:]
        for (index, engine) in ["raw", "postbox", "postbox", "raw"].enumerated() {
            let db = workDir + "/\(engine).sqlite"
            try Self.copy(source, db)
            // The copy's pages are written back before the pass, not by its first fsync: the
            // timed pass measures the trim, not how much of a fresh 900 MB copy is still dirty.
            settleDisk()
            let (pass, wait, writes) = try Self.pass(engine, db: db, keep: keep)
            times[engine] = min(times[engine] ?? .infinity, pass.seconds)
            table.add([
                "\(index / 2 + 1)", engine == "raw" ? "raw SQL (same deletes, same schema)" : "HistoryRetention", fmt(pass.seconds, 2),
                fmt(pass.io.cpuSeconds, 2), pass.io.writesCell, pass.io.readsCell, "\(pass.removed)",
                fmt(Double(Self.size(db)) / 1_048_576, 1), fmt(pass.rss, 1), fmt(wait * 1000, 1) + " (\(writes) writes)",
            ])
            if index == 1 {  // the first HistoryRetention pass: its store is checked
                let postbox = try Postbox(path: db)
                let consistent = try postbox.checkHistoryConsistency()
                let integrity = try postbox.integrityCheck()
                print(
                    "postbox side: integrity \(integrity.joined(separator: ",")), consistency \(consistent.isEmpty ? "ok" : consistent.joined(separator: "; "))"
                )
            }
            try? FileManager.default.removeItem(atPath: db)
        }
        table.print()
        let ratio = times["postbox"]! / times["raw"]!
        print("postbox/raw time, the faster pass of each: \(fmt(ratio))× (target ≤ 1.3×)")
        BenchRatios.record(
            "retention", "trim half of \(peers * perPeer) messages + vacuum", product: fmt(times["postbox"]!, 2) + " s",
            peer: fmt(times["raw"]!, 2) + " s raw SQL", ratio: times["raw"]! / times["postbox"]!, target: 1 / 1.3)
    }

    /// Peak RSS flat in the store's size: the same trim on a store a tenth the size.
    func peakRSSOnATenth() throws {
        let small = workDir + "/small.sqlite"
        try Self.build(path: small, peers: peers, perPeer: max(2, perPeer / 10))
        let (smallPass, _, _) = try Self.pass("postbox", db: small, keep: max(1, perPeer / 20))
        print("peak RSS of the retention process: \(fmt(smallPass.rss, 1)) MiB at \(peers * max(2, perPeer / 10)) messages, see above at \(peers * perPeer)")
        try? FileManager.default.removeItem(atPath: small)
    }

    /// The size-limit run on a copy of `source`, checked: under the limit, the newest messages
    /// of every peer kept, every removed range a trimmed hole, the store consistent.
    func checkSizeLimit(_ source: String, sourceBytes: Int64) throws {
        let sized = workDir + "/sized.sqlite"
        try Self.copy(source, sized)
        let limit = sourceBytes * 4 / 10
        let keepNewest = 100
        let (sizePass, sizeWait, _) = try Self.pass("postbox", db: sized, keep: keepNewest, sizeLimit: limit)
        let postbox = try Postbox(path: sized)
        let after = try postbox.databaseBytes()
        var keptOk = true, holesOk = true
        try postbox.readSync { tx in
            for p in 0..<peers {
                let peer = PeerId(Int64(1000 + p))
                var ids: [Int32] = []
                try tx.messages.scanIndexes(peer: peer, newestFirst: false) { index, _ in
                    ids.append(index.id.id); return true
                }
                ids.sort()
                if ids.count < keepNewest || ids.suffix(keepNewest) != ArraySlice((perPeer - keepNewest + 1)...perPeer).map(Int32.init)[...] { keptOk = false }
                let holes = try tx.holes.entries(peer: peer)
                if let first = ids.first, first > 1 {
                    if holes != [HistoryHole(1...(first - 1), kind: .trimmed)] { holesOk = false }
                } else if !holes.isEmpty {
                    holesOk = false
                }
            }
        }
        let problems = try postbox.checkHistoryConsistency()
        let remaining = try postbox.readSync { tx in try (0..<peers).reduce(0) { $0 + (try tx.messages.count(peer: PeerId(Int64(1000 + $1)))) } }
        print(
            """
            size limit \(fmt(Double(limit) / 1_048_576, 1)) MiB on \(fmt(Double(sourceBytes) / 1_048_576, 1)) MiB, keepNewest \(keepNewest): \
            one run in \(fmt(sizePass.seconds, 1)) s removed \(sizePass.removed) messages, \(remaining) left; \
            file now \(fmt(Double(after) / 1_048_576, 1)) MiB + WAL \(Self.size(sized + "-wal")) B — \(after <= limit ? "under the limit" : "OVER THE LIMIT")
              integrity_check: \(try postbox.integrityCheck().joined(separator: ",")); newest \(keepNewest) of every peer kept: \(keptOk ? "yes" : "NO"); \
            every removed range a trimmed hole: \(holesOk ? "yes" : "NO"); consistency (indexes, dangling references, holes): \(problems.isEmpty ? "ok" : problems.joined(separator: "; ")); \
            peak RSS \(fmt(sizePass.rss, 1)) MiB; longest other-writer wait \(fmt(sizeWait * 1000, 1)) ms
            """)
    }

    struct Pass { var seconds: Double; var removed: Int; var rss: Double; var io: ProcessIO }

    /// Runs one side in a child process while this process writes a row every 5 ms through its
    /// own connection, timing each of those transactions.
    static func pass(_ engine: String, db: String, keep: Int, sizeLimit: Int64? = nil) throws -> (Pass, Double, Int) {
        let writer = try Postbox(path: db)
        let child = Process()
        child.executableURL = thisExecutable
        child.arguments = ["retention-pass", engine, db, "\(keep)"] + (sizeLimit.map { ["\($0)"] } ?? [])
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        var longest = 0.0
        var writes = 0
        while child.isRunning {
            let t = try measure {
                try writer.transactionSync { tx in try tx.peers.set(PostboxPeer(id: PeerId(Int64(9_000_000 + writes)), category: .group, title: "writer")) }
            }
            longest = max(longest, t)
            writes += 1
            usleep(5_000)
        }
        child.waitUntilExit()
        guard child.terminationStatus == 0 else { throw BenchError("retention-pass \(engine) failed") }
        let fields = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ")
        guard fields.count == 3 + ProcessIO.fieldCount, let s = Double(fields[0]), let r = Int(fields[1]), let m = Double(fields[2]),
            let io = ProcessIO.parse(Array(fields.dropFirst(3)))
        else {
            throw BenchError("retention-pass \(engine): unexpected output")
        }
        return (Pass(seconds: s, removed: r, rss: m, io: io), longest, writes)
    }

    static func size(_ path: String) -> Int64 { fileBytes(path) }

    /// A closed store: the database file and its WAL (a small WAL keeps the last commits).
    static func copy(_ from: String, _ to: String) throws {
        for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: to + s) }
        try FileManager.default.copyItem(atPath: from, toPath: to)
        if FileManager.default.fileExists(atPath: from + "-wal") { try FileManager.default.copyItem(atPath: from + "-wal", toPath: to + "-wal") }
    }

    static let base: Int64 = 1_600_000_000
    static func timestamp(peer: Int, message: Int) -> Int64 { base + Int64(message) * 3600 + Int64(peer) }
    static func fileId(peer: Int, message: Int) -> Int64 { Int64(peer) * 10_000_000 + Int64(message) }
    static func location(peer: Int, message: Int) -> FileLocation {
        let id = fileId(peer: peer, message: message)
        return FileLocation(type: .photo, id: id, accessHash: id &* 31, dcId: 1, thumbSize: "m")
    }

    /// The store as `sync-history` leaves it: messages one hour apart, peers interleaved in
    /// time, every other message with a photo whose file reference is recorded.
    static func build(path: String, peers: Int, perPeer: Int) throws {
        for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) }
        let postbox = try Postbox(path: path)
        let perTransaction = max(1, 50_000 / perPeer)
        for first in stride(from: 0, to: peers, by: perTransaction) {
            try postbox.transactionSync { tx in
                for p in first..<min(peers, first + perTransaction) {
                    let peer = PeerId(Int64(1000 + p))
                    try tx.peers.set(PostboxPeer(id: peer, category: [.privateChat, .group, .channel][p % 3], title: "peer \(p)"))
                    var batch: [PostboxMessage] = []
                    batch.reserveCapacity(perPeer)
                    for i in 1...perPeer {
                        let ts = timestamp(peer: p, message: i)
                        var media: [any Media] = []
                        if i % 2 == 0 {
                            let loc = location(peer: p, message: i)
                            let file = CloudFileDescriptor(
                                resourceId: loc.stableKey, location: loc, size: 80_000, contentType: .photo, mimeType: "image/jpeg",
                                fileReference: FileReference(Data(repeating: 5, count: 24)), referenceObtainedAt: ts)
                            media = [
                                CloudPhotoMedia(
                                    photoId: loc.id, accessHash: loc.accessHash, dcId: 1, date: ts,
                                    sizes: [CloudPhotoSize(type: "m", width: 800, height: 600, file: file)])
                            ]
                        }
                        batch.append(PostboxMessage(id: MessageId(peerId: peer, id: Int32(i)), timestamp: Int32(ts), text: benchText(i), media: media))
                    }
                    try tx.messages.add(batch)
                    for m in batch { for record in CloudMediaConversion.referenceRecords(of: m) { try tx.mediaReferences.set(record) } }
                }
            }
        }
        _ = try postbox.checkpointWAL(truncate: true, maxWaitMilliseconds: 5_000)
    }
}

/// The raw-SQL side: the rows HistoryRetention removes, deleted by key with prepared
/// statements over the same tables (range deletes where the keys are contiguous, like
/// HistoryRetention), the same hole row written per peer, then `incremental_vacuum` and a
/// truncating checkpoint. It knows every key from the generator: it reads nothing.
final class RawRetention {
    let db: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            throw BenchError("cannot open \(path)")
        }
        db = handle
        sqlite3_busy_timeout(db, 60_000)
        try exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-\(SqliteValueBox.pageCacheKiB); PRAGMA temp_store=MEMORY")
    }

    deinit { sqlite3_close_v2(db) }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("raw: \(String(cString: sqlite3_errmsg(db)))") }
    }

    private func prepare(_ sql: String) -> OpaquePointer {
        var stmt: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &stmt, nil)
        return stmt!
    }

    private func step(_ stmt: OpaquePointer, _ keys: [ValueBoxKey], value: [UInt8]? = nil) throws {
        for (i, k) in keys.enumerated() {
            _ = k.bytes.withUnsafeBytes { sqlite3_bind_blob(stmt, Int32(i + 1), $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_RAW) }
        }
        if let value { _ = value.withUnsafeBytes { sqlite3_bind_blob(stmt, Int32(keys.count + 1), $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_RAW) } }
        guard sqlite3_step(stmt) == SQLITE_DONE else { throw BenchError("raw: \(String(cString: sqlite3_errmsg(db)))") }
        sqlite3_reset(stmt)
    }

    /// Removes every message of every peer but the newest `keepPerPeer`.
    func trim(keepPerPeer: Int) throws -> Int {
        let messagesRange = prepare("DELETE FROM t2 WHERE key >= ? AND key <= ?")
        let idRange = prepare("DELETE FROM t3 WHERE key >= ? AND key <= ?")
        let media = prepare("DELETE FROM t4 WHERE key = ?")
        let reference = prepare("DELETE FROM t7 WHERE key = ?")
        let byTime = prepare("DELETE FROM t8 WHERE key = ?")
        let byParent = prepare("DELETE FROM t9 WHERE key >= ? AND key < ?")
        // Postbox creates a table on its first write; the store has had no hole yet.
        try exec("CREATE TABLE IF NOT EXISTS t6 (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID")
        let hole = prepare("INSERT OR REPLACE INTO t6 (key, value) VALUES (?, ?)")
        let count = prepare("SELECT count(*) FROM t3 WHERE key >= ? AND key < ?")
        defer { [messagesRange, idRange, media, reference, byTime, byParent, hole, count].forEach { sqlite3_finalize($0) } }
        var peers: [Int64] = []
        let list = prepare("SELECT key FROM t1 ORDER BY key")
        while sqlite3_step(list) == SQLITE_ROW { peers.append(sqlite3_column_int64(list, 0)) }
        sqlite3_finalize(list)
        var removed = 0
        for peerRaw in peers where peerRaw >= 1000 && peerRaw < 9_000_000 {
            let p = Int(peerRaw - 1000)
            let peer = PeerId(peerRaw)
            // The peer's cloud messages: keys order-preserving, so namespace 0 is not four zero bytes.
            var prefix = ValueBoxKey(length: 12)
            prefix.setInt64(0, value: peerRaw)
            prefix.setInt32(8, value: MessageId.cloudNamespace)
            _ = prefix.bytes.withUnsafeBytes { sqlite3_bind_blob(count, 1, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_RAW) }
            _ = prefix.prefixUpperBound!.bytes.withUnsafeBytes { sqlite3_bind_blob(count, 2, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_RAW) }
            let stored = sqlite3_step(count) == SQLITE_ROW ? Int(sqlite3_column_int64(count, 0)) : 0
            sqlite3_reset(count)
            let last = stored - keepPerPeer
            guard last > 0 else { continue }
            try exec("BEGIN IMMEDIATE")
            let upper = MessageHistoryTable.messageKey(
                MessageIndex(
                    id: MessageId(peerId: peer, id: Int32(last)),
                    timestamp: Int32(RetentionBenchmark.timestamp(peer: p, message: last))))
            try step(messagesRange, [prefix, upper])
            var idLo = prefix + ValueBoxKey(length: 4), idHi = idLo
            idLo.setInt32(12, value: 1)
            idHi.setInt32(12, value: Int32(last))
            try step(idRange, [idLo, idHi])
            for i in stride(from: 2, through: last, by: 2) {
                let loc = RetentionBenchmark.location(peer: p, message: i)
                var mk = ValueBoxKey(length: 28)
                mk.setInt32(0, value: CloudMediaNamespace.photo)
                mk.setInt64(4, value: loc.id)
                mk.setInt64(12, value: peerRaw)
                mk.setInt32(20, value: 0)
                mk.setInt32(24, value: Int32(i))
                try step(media, [mk])
                let rid = ValueBoxKey(string: loc.stableKey)
                try step(reference, [rid])
                try step(byTime, [ValueBoxKey(RetentionBenchmark.timestamp(peer: p, message: i)) + rid])
            }
            let lo = MediaParent.message(MessageId(peerId: peer, id: 1)).key
            let hi = MediaParent.message(MessageId(peerId: peer, id: Int32(last))).key.prefixUpperBound!
            try step(byParent, [lo, hi])
            var holeValue = withUnsafeBytes(of: Int32(1).littleEndian) { Array($0) }
            holeValue.append(1)
            try step(hole, [idHi], value: holeValue)
            try exec("COMMIT")
            removed += last
        }
        try exec("PRAGMA incremental_vacuum")
        try exec("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed
    }
}

private let SQLITE_TRANSIENT_RAW = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
