import Foundation
import MediaBox
import Postbox

/// The cleanup benchmark: a MediaBox of `files` one-byte resources with access times
/// (and mtimes) spread over 300 h, indexed in StorageBox, and an identical copy of the tree for
/// the peers. Times, in one run:
/// (a) victim selection for `evictFraction` of the cache from the index vs
///     `find DIR -type f -printf '%T@ %s %p\n' | sort -n` (full-scan LRU selection);
/// (b) the whole TTL cleanup removing ~`evictFraction` vs `find DIR -type f -mmin +N -delete`;
/// and peak RSS of each side. Files live in the MediaBox layout (`media/<shard>/<name>`, 256
/// shard folders), and the peer tree has the same folders; `folders` sets how many peers own
/// them (the cardinality of per-peer totals).
func runCleanupBenchmark(files: Int, folders: Int, evictFraction: Double, workDir: String) throws {
    let bench = try CleanupBenchmarkRun(files: files, folders: folders, evictFraction: evictFraction, workDir: workDir)
    defer { bench.removeTrees() }
    print("cleanup benchmark: \(files) one-byte files, access times over 300 h, \(bench.peers) peers, evict \(Int(evictFraction * 100))%")
    print("building the MediaBox tree, its StorageBox index and an identical peer tree under \(bench.root) …")
    try bench.build()
    let selection = try bench.selectVictims()
    let cleanup = try bench.cleanUp()
    try bench.report(selection, cleanup)
}

/// The cleanup benchmark's trees and its phases: build, (a) victim selection, (b) the whole
/// cleanup, and the report.
private struct CleanupBenchmarkRun {
    let files: Int
    let peers: Int
    let evictFraction: Double
    let root: String
    let media: String
    let peerTree: String
    let box: MediaBox
    let peerRSS: PeerRSS
    let span: Int64 = 300 * 3600
    let now = Int64(Date().timeIntervalSince1970)

    /// One side's figures for a phase: seconds and peak RSS (MiB).
    struct Side {
        var seconds: Double
        var rss: Double
    }

    struct Selection {
        var ours: Side
        var peer: Side
        var selected: Int
        var selectedBytes: Int64
        var peerLines: Int
    }

    struct Cleanup {
        var ours: Side
        var peer: Side
        var removed: Int64
        var peerRemoved: Int
    }

    init(files: Int, folders: Int, evictFraction: Double, workDir: String) throws {
        self.files = files
        self.peers = max(1, folders)
        self.evictFraction = evictFraction
        root = workDir + "/cleanup-bench-\(getpid())"
        media = root + "/ours/account-1/postbox/media"
        peerTree = root + "/peer"
        try FileManager.default.createDirectory(atPath: peerTree, withIntermediateDirectories: true)
        box = try MediaBox(basePath: media)
        // Both trees get every shard folder (a cache of this size uses all of them).
        for dir in [media, peerTree] {
            for shard in MediaShard.names { try FileManager.default.createDirectory(atPath: dir + "/" + shard, withIntermediateDirectories: true) }
        }
        peerRSS = PeerRSS(directory: root)
    }

    func removeTrees() {
        fflush(nil)
        // rm -rf is much lighter than FileManager's recursive removal for a million entries.
        _ = try? runPeerShell("rm -rf '\(root)'; echo 0")
    }

    /// A permutation of 0..<files spread evenly over the span, so index order ≠ creation order.
    func accessTime(_ i: Int) -> Int64 {
        let slot = Int64((UInt64(i) &* 2654435761) % UInt64(files))
        return now - 60 - slot * span / Int64(files)
    }

    /// Creates every file in both trees and indexes ours, then syncs the disk.
    func build() throws {
        let types = MediaContentType.allCases
        let buildSeconds = try measure {
            let batch = 10_000
            var start = 0
            while start < files {
                let end = min(files, start + batch)
                let first = start
                // Two threads create files (both trees); the index rows go in one transaction per batch.
                let failures = Atomic()
                DispatchQueue.concurrentPerform(iterations: 2) { worker in
                    var i = first + worker
                    while i < end {
                        let name = MediaResourceId("f\(i)").safeFileName
                        let relative = MediaShard.name(forFileName: name) + "/" + name
                        let t = accessTime(i)
                        for dir in [media, peerTree] where !writeOneByteFile(dir + "/" + relative, mtime: t) { failures.increment() }
                        i += 2
                    }
                }
                if failures.value > 0 { throw MediaBoxError.io(path: root, operation: "create benchmark files", errno: errno) }
                var entries: [StorageBoxEntry] = []
                entries.reserveCapacity(end - start)
                for i in start..<end {
                    let info = MediaResourceStorageInfo(
                        peerId: PeerId(Int64(i % peers + 1)), peerClass: PeerStorageClass.allCases[i % 3],
                        contentType: types[i % types.count])
                    entries.append(StorageBoxEntry(id: MediaResourceId("f\(i)"), info: info, size: 1, accessTime: accessTime(i)))
                }
                try box.storageBox.insert(entries)
                start = end
            }
        }
        // Both trees on disk before timing anything, so write-back does not land in one side's time.
        let syncSeconds = measure { settleDisk() }
        print("built in \(fmt(buildSeconds, 1)) s, synced in \(fmt(syncSeconds, 1)) s")
        fflush(nil)
    }

    /// (a) Victim selection: LRU down to (1 - fraction) of the cache, from the index against
    /// `find | sort`.
    func selectVictims() throws -> Selection {
        let total = try box.stats().total
        let limit = total.bytes - Int64(Double(total.bytes) * evictFraction)
        resetPeakRSS()
        var selected = 0
        var selection = StorageUsage()
        let ourSelect = try measure {
            selection = try TimeBasedCleanup.selectVictims(storageBox: box.storageBox, options: CleanupOptions(sizeLimit: limit, now: now)) { _, _ in
                selected += 1
            }
        }
        let ourSelectRSS = currentPeakRSSMiB()
        var peerLines = 0
        let timed = peerRSS.shellPrefix("sel")
        let peerSelect = try measure {
            peerLines = try runPeerShell("\(timed)find '\(peerTree)' -type f -printf '%T@ %s %p\\n' | \(timed)sort -n | head -n \(selected) | wc -l")
        }
        return Selection(
            ours: Side(seconds: ourSelect, rss: ourSelectRSS), peer: Side(seconds: peerSelect, rss: peerRSS.peakMiB("sel")),
            selected: selected, selectedBytes: selection.bytes, peerLines: peerLines)
    }

    /// (b) Whole cleanup by TTL: everything older than (1 - fraction) of the span, against
    /// `find -mmin -delete`.
    func cleanUp() throws -> Cleanup {
        let ttl = Int64(Double(span) * (1 - evictFraction))
        resetPeakRSS()
        var report: CleanupReport?
        let ourCleanup = try measure {
            report = try TimeBasedCleanup(mediaBox: box).run(CleanupOptions(generalTTL: ttl, now: now))
        }
        let ourCleanupRSS = currentPeakRSSMiB()
        let minutes = (ttl + 60) / 60
        let before = try countFiles(peerTree)
        let peerCleanup = try measure {
            _ = try runPeerShell("\(peerRSS.shellPrefix("del"))find '\(peerTree)' -type f -mmin +\(minutes) -delete; echo")
        }
        let peerRemoved = before - (try countFiles(peerTree))
        return Cleanup(
            ours: Side(seconds: ourCleanup, rss: ourCleanupRSS), peer: Side(seconds: peerCleanup, rss: peerRSS.peakMiB("del")),
            removed: report?.removed.count ?? 0, peerRemoved: peerRemoved)
    }

    /// The table, the ratios recorded for the summary, and the index left.
    func report(_ selection: Selection, _ cleanup: Cleanup) throws {
        let (ourSelect, peerSelect) = (selection.ours.seconds, selection.peer.seconds)
        let (ourCleanup, peerCleanup) = (cleanup.ours.seconds, cleanup.peer.seconds)
        var table = BenchTable(
            title: "cleanup: \(files) files (sharded MediaBox layout, 256 folders), \(Int(evictFraction * 100))% evicted",
            columns: ["measure", "jobrun (index)", "peer", "ratio (peer/ours)"])
        table.add(["victim selection (s)", fmt(ourSelect, 3), fmt(peerSelect, 3) + " find|sort", fmt(peerSelect / max(ourSelect, 1e-9), 1) + "×"])
        table.add(["  victims selected", "\(selection.selected) (\(selection.selectedBytes) B)", "\(selection.peerLines) lines", ""])
        table.add(["whole cleanup (s)", fmt(ourCleanup, 2), fmt(peerCleanup, 2) + " find -delete", fmt(peerCleanup / max(ourCleanup, 1e-9), 2) + "×"])
        table.add(["  files removed", "\(cleanup.removed)", "\(cleanup.peerRemoved)", ""])
        table.add(["peak RSS, selection (MiB)", fmt(selection.ours.rss, 1), fmt(selection.peer.rss, 1) + " (find, sort)", ""])
        table.add(["peak RSS, cleanup (MiB)", fmt(cleanup.ours.rss, 1), fmt(cleanup.peer.rss, 1) + " (find)", ""])
        table.print()
        BenchRatios.record(
            "cleanup", "LRU victim selection, \(files) files", product: fmt(ourSelect, 3) + " s", peer: fmt(peerSelect, 3) + " s find|sort",
            ratio: peerSelect / max(ourSelect, 1e-9), target: 20)
        BenchRatios.record(
            "cleanup", "whole cleanup, \(files) files", product: fmt(ourCleanup, 2) + " s", peer: fmt(peerCleanup, 2) + " s find -delete",
            ratio: peerCleanup / max(ourCleanup, 1e-9), target: 2)
        print("index after cleanup: \(try box.stats().total.count) files; removal threads: \(CleanupOptions().removalThreads)")
        fflush(nil)
    }
}

/// A counter shared by the creation threads.
private final class Atomic: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

private func writeOneByteFile(_ path: String, mtime: Int64) -> Bool {
    let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var byte: UInt8 = 0x61
    guard write(fd, &byte, 1) == 1 else { return false }
    var times = [timespec(tv_sec: Int(mtime), tv_nsec: 0), timespec(tv_sec: Int(mtime), tv_nsec: 0)]
    return futimens(fd, &times) == 0
}

private func countFiles(_ dir: String) throws -> Int {
    try runPeerShell("find '\(dir)' -type f | wc -l")
}

/// Resets this process's peak RSS (Linux ≥ 4.0: writing 5 to clear_refs resets VmHWM).
private func resetPeakRSS() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// VmHWM from /proc/self/status (peak since the last reset), else ru_maxrss.
private func currentPeakRSSMiB() -> Double {
    if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kb = Double(line.split(separator: " ").dropFirst().first ?? "")
    {
        return kb / 1024
    }
    return peakRSSMiB()
}
