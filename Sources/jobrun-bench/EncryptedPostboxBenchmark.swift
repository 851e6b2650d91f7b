import Foundation
import Postbox

/// The encrypted Postbox (SQLCipher 4's page format through the store's VFS, raw 32-byte key)
/// against the plain Postbox and raw SQLite, in one run: the four Postbox workloads, and
/// opening an existing store. Each workload runs in two rounds on new stores, in both orders
/// (plain against encrypted, raw SQLite against plain); each side's faster round is reported.
struct EncryptedPostboxBenchmark {
    var messages = 1_000_000
    var smallTransactions = 100_000
    var reads = 100_000
    var peers = 10
    /// Opens (and closes) of each store for the open row.
    var opens = 300
    var workDir: String

    /// The encrypted store's time over the plain one's, at most.
    static let target = 1.10
    /// What opening with a key may add, at most (milliseconds).
    static let openTargetMilliseconds = 1.0

    func run() throws {
        try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
        let raw = workDir + "/raw.sqlite"
        let plain = workDir + "/plain.sqlite"
        let encrypted = workDir + "/encrypted.sqlite"
        let workloads = PostboxWorkloads(messages: messages, smallTransactions: smallTransactions, reads: reads, peers: peers)
        let key = StoreKey.random()
        var versusPlain: [PostboxWorkloads.Timing] = []
        var versusRaw: [PostboxWorkloads.Timing] = []
        for round in 0..<2 {
            for p in [raw, plain, encrypted] { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: p + s) } }
            versusPlain = PostboxWorkloads.faster(
                versusPlain,
                try workloads.run(
                    raw: PostboxSide(postbox: try Postbox(path: plain)), product: PostboxSide(postbox: try Postbox(path: encrypted, key: key)),
                    peerFirst: round == 0))
            try? FileManager.default.removeItem(atPath: plain)
            for s in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: plain + s) }
            versusRaw = PostboxWorkloads.faster(
                versusRaw, try workloads.run(raw: try RawStore(path: raw), postbox: try Postbox(path: plain), peerFirst: round == 1))
        }
        var table = BenchTable(
            title:
                "Encrypted Postbox (SQLCipher 4 format, raw key) vs plain Postbox vs raw SQLite (each: WAL, synchronous=NORMAL, a \(SqliteValueBox.pageCacheKiB / 1024) MiB page cache; the encrypted store file is \(fmt(Double(fileBytes(encrypted)) / 1e6, 1)) MB)",
            columns: ["workload", "raw (ops/s)", "plain (ops/s)", "encrypted (ops/s)", "encrypted/plain time", "target"])
        for (vp, vr) in zip(versusPlain, versusRaw) {
            let ratio = vp.postbox / vp.raw
            BenchRatios.record(
                "postbox-encrypted", vp.name, product: fmt(Double(vp.ops) / vp.postbox, 0) + " ops/s",
                peer: fmt(Double(vp.ops) / vp.raw, 0) + " ops/s plain Postbox",
                ratio: vp.raw / vp.postbox, target: 1 / Self.target)
            table.add([
                vp.name, fmt(Double(vr.ops) / vr.raw, 0), fmt(Double(vp.ops) / vp.raw, 0), fmt(Double(vp.ops) / vp.postbox, 0), fmt(ratio) + "×",
                ratio <= Self.target ? "≤\(fmt(Self.target))× ok" : "≤\(fmt(Self.target))× MISSED",
            ])
        }
        let (plainOpen, encryptedOpen) = try openTimes(plain: plain, encrypted: encrypted, key: key)
        let added = (encryptedOpen - plainOpen) * 1000
        BenchRatios.record(
            "postbox-encrypted", "open an existing store", product: fmt(encryptedOpen * 1000, 3) + " ms with a raw key",
            peer: fmt(plainOpen * 1000, 3) + " ms plain",
            ratio: plainOpen / encryptedOpen, target: nil)
        table.add([
            "open + close an existing store (\(opens)×, ms each)", "", fmt(plainOpen * 1000, 3), fmt(encryptedOpen * 1000, 3), "+" + fmt(added, 3) + " ms",
            added <= Self.openTargetMilliseconds ? "≤+1 ms ok" : "≤+1 ms MISSED",
        ])
        table.print()
    }

    /// Seconds per open and close of each store, alternating between them, best of two rounds.
    private func openTimes(plain: String, encrypted: String, key: StoreKey) throws -> (Double, Double) {
        var best = (Double.infinity, Double.infinity)
        for _ in 0..<2 {
            var sums = (0.0, 0.0)
            for _ in 0..<opens {
                sums.0 += try measure { _ = try Postbox(path: plain) }
                sums.1 += try measure { _ = try Postbox(path: encrypted, key: key) }
            }
            best = (min(best.0, sums.0 / Double(opens)), min(best.1, sums.1 / Double(opens)))
        }
        return best
    }
}
