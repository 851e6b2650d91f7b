import ArgumentParser
import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import MediaBox

/// `jobrun-bench download`: MultipartFetch into a MediaBox against aria2c and curl, all fetching
/// the same files from the same cloudd in one run.
struct DownloadBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "MultipartFetch (into MediaBox, durable completion) vs aria2c and curl from the same cloudd, at each round trip.")
    @Option(help: "Small files (10–200 KB).") var smallFiles = 2000
    @Option(help: "Rounds of the small-file set (each runs the product, aria2c and curl; the worst ratio counts).") var smallRounds = 3
    @Option(help: "Large files.") var largeFiles = 10
    @Option(help: "Timed rounds of the large-file set, after an untimed one (the product, synced, then curl; medians compared).") var largeRounds = 3
    @Option(help: "Size of each large file in MB (10^6 bytes).") var largeMb = 100
    @Option(help: "Size in GiB of the single file downloaded for peak RSS (0 skips).") var rssGib = 2
    @Option(help: "A cloudd executable to serve from (default: the one next to this binary, else in-process).") var cloudd: String?
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-download"
    @Option(help: "Round trips MS:BANDWIDTH (comma-separated; cloudd's delay before every answer and pace per body; 0:0 = loopback, context only).")
    var roundTrips = RoundTrip.defaultAxis
    @Option(help: "glibc malloc: serve allocations ≥ this many KiB with mmap, so freed part buffers leave RSS (0 = glibc default).") var mmapThresholdKib = 0

    func run() throws {
        let options = self
        if mmapThresholdKib > 0 { setMallocMmapThreshold(bytes: mmapThresholdKib * 1024) }
        let axis = try RoundTrip.parse(roundTrips)
        let outcome = BlockingResult()
        Task {
            do {
                try await runDownloadBenchmark(
                    smallFiles: options.smallFiles, smallRounds: options.smallRounds, largeFiles: options.largeFiles,
                    largeRounds: options.largeRounds, largeMB: options.largeMb, rssGiB: options.rssGib, cloudd: options.cloudd, workDir: options.workDir,
                    axis: axis)
                outcome.set(nil)
            } catch {
                outcome.set("\(error)")
            }
        }
        if let failure = outcome.wait() { throw ValidationError("download benchmark failed: \(failure)") }
    }
}

/// glibc `mallopt(M_MMAP_THRESHOLD, bytes)` (not exported by the Glibc module): allocations of at
/// least `bytes` are mmapped and unmapped on free, so 1 MiB part buffers leave RSS when released.
func setMallocMmapThreshold(bytes: Int) {
    typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
    _ = unsafeBitCast(symbol, to: Mallopt.self)(-3 /* M_MMAP_THRESHOLD */, Int32(bytes))
}

/// A value handed from a task to a blocked thread.
final class BlockingResult: @unchecked Sendable {
    // @unchecked Sendable: guarded by the semaphore (written once before signal, read after wait).
    private let semaphore = DispatchSemaphore(value: 0)
    private var value: String?
    func set(_ v: String?) { value = v; semaphore.signal() }
    func wait() -> String? { semaphore.wait(); return value }
}

/// The server side of the benchmark: a `cloudd` child process or an in-process `CloudServer`.
final class BenchCloud: @unchecked Sendable {
    // @unchecked Sendable: immutable after start.
    let dcURLs: [String]
    private let process: Process?
    private let server: CloudServer?

    static func start(smallFiles: Int, largeFiles: Int, largeBytes: Int64, rssBytes: Int64, cloudd: String?) async throws -> BenchCloud {
        var c = CloudServerConfig()
        c.seed = 7
        c.dcCount = 2
        c.dataset.peers = 2
        c.dataset.messagesPerPeer = 2
        c.dataset.bulkFiles = [BulkFileSpec(count: smallFiles, minSize: 10_000, maxSize: 200_000)]
        c.dataset.bigFiles = [Int64](repeating: largeBytes, count: largeFiles) + (rssBytes > 0 ? [rssBytes] : [])
        return try await start(c, cloudd: cloudd)
    }

    /// Serves the dataset of `c` (its seed, datacenters and dataset shape; never CDN files)
    /// from the `cloudd` executable (default: the one next to this binary) as a child process,
    /// so that its work never shares this process's threads with what is measured; in-process
    /// when there is no such executable. Returns once every file's part hashes are ready.
    static func start(_ c: CloudServerConfig, cloudd: String?) async throws -> BenchCloud {
        let executable = cloudd ?? siblingExecutable("cloudd")
        if FileManager.default.isExecutableFile(atPath: executable) {
            let d = c.dataset
            var args = [
                "--seed", "\(c.seed)", "--dcs", "\(c.dcCount)", "--peers", "\(d.peers)", "--messages-per-peer", "\(d.messagesPerPeer)",
                "--cdn-fraction", "0", "--max-media-size", "\(d.maxMediaSize)",
            ]
            for spec in d.bulkFiles { args += ["--bulk-files", "\(spec.count):\(spec.minSize)-\(spec.maxSize)"] }
            for (count, size) in runs(d.bigFiles) { args += ["--big-files", "\(count):\(size)"] }
            for (count, size) in runs(d.benchVideos) { args += ["--bench-videos", "\(count):\(size)"] }
            let (p, dcURLs) = try launchCloudd(executable, args)
            print("server: cloudd child process (pid \(p.processIdentifier))")
            let cloud = BenchCloud(dcURLs: dcURLs, process: p, server: nil)
            try await cloud.waitForPartHashes()
            return cloud
        }
        var inProcess = c
        inProcess.cdnFraction = 0
        inProcess.partHashesAtStart = true
        let server = try await CloudServer.start(inProcess)
        print("server: in-process CloudServer (its memory counts in this process's RSS)")
        let cloud = BenchCloud(dcURLs: server.dcURLs.map(\.absoluteString), process: nil, server: server)
        try await cloud.waitForPartHashes()
        return cloud
    }

    /// Runs of equal sizes, in order, as `(count, size)`.
    private static func runs(_ sizes: [Int64]) -> [(Int, Int64)] {
        var out: [(Int, Int64)] = []
        for s in sizes {
            if let last = out.last, last.1 == s { out[out.count - 1].0 += 1 } else { out.append((1, s)) }
        }
        return out
    }

    private init(dcURLs: [String], process: Process?, server: CloudServer?) {
        self.dcURLs = dcURLs
        self.process = process
        self.server = server
    }

    /// CPU seconds (user + system) the cloudd child has used so far; nil in-process.
    func cpuSeconds() -> Double? { process.flatMap { ProcStat(pid: $0.processIdentifier)?.own } }

    /// Waits (untimed) until cloudd holds every file's part hashes, as a file server does for
    /// files at rest: the timed downloads then measure serving, not cloudd's start-up hashing.
    func waitForPartHashes() async throws {
        struct Status: Decodable { let pending: Int }
        let transport = try CurlTransport()
        let start = DispatchTime.now().uptimeNanoseconds
        while true {
            let r = try await transport.get(dcURLs[0] + "/admin/part-hashes")
            guard r.status == 200 else { return }  // an older cloudd hashes per request
            let pending = try JSONDecoder().decode(Status.self, from: r.body).pending
            if pending == 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        print("server: part hashes ready after \(fmt(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)) s (untimed)")
    }

    func stop() async {
        if let process { process.terminate(); process.waitUntilExit() }
        if let server { await server.stop() }
    }
}

/// Runs the whole benchmark and prints the tables.
func runDownloadBenchmark(
    smallFiles: Int, smallRounds: Int = 3, largeFiles: Int, largeRounds: Int = 3, largeMB: Int, rssGiB: Int, cloudd: String?,
    workDir: String, axis: [RoundTrip] = [RoundTrip(latencyMs: 0, bandwidth: 0)]
) async throws {
    let fm = FileManager.default
    try? fm.removeItem(atPath: workDir)
    try fm.createDirectory(atPath: workDir, withIntermediateDirectories: true)
    defer { WorkDirectory.remove(workDir) }
    let largeBytes = Int64(largeMB) * 1_000_000
    let rssBytes = Int64(rssGiB) << 30
    let cloud = try await BenchCloud.start(smallFiles: smallFiles, largeFiles: largeFiles, largeBytes: largeBytes, rssBytes: rssBytes, cloudd: cloudd)
    do {
        try await benchmarkBody(
            cloud: cloud, smallFiles: smallFiles, smallRounds: max(1, smallRounds), largeRounds: max(1, largeRounds), largeBytes: largeBytes,
            rssBytes: rssBytes, workDir: workDir, axis: axis)
    } catch {
        await cloud.stop()
        throw error
    }
    await cloud.stop()
}

/// Peak RSS allowed while one multi-GiB file downloads.
private let rssBudgetMiB = 48.0

private func benchmarkBody(
    cloud: BenchCloud, smallFiles: Int, smallRounds: Int, largeRounds: Int, largeBytes: Int64, rssBytes: Int64, workDir: String,
    axis: [RoundTrip]
) async throws {
    let transport = try CurlTransport()
    var datacenters: [Int: String] = [:]
    for (i, u) in cloud.dcURLs.enumerated() { datacenters[i + 1] = u }
    let configuration = MultipartFetchConfiguration(datacenters: datacenters)
    print(
        "MultipartFetch: parts in flight follow the measured throughput, from \(configuration.initialConcurrentParts) up to \(configuration.maxConcurrentParts) over all files and \(configuration.maxPartsPerFile) per file"
    )
    let api = BenchAPI(transport: transport, base: cloud.dcURLs[0])
    let docs = try await api.benchDocuments()
    let small = docs.filter { $0.size <= 200_000 }
    let large = docs.filter { $0.size == largeBytes }
    let huge = docs.first { $0.size == rssBytes && rssBytes > 0 }
    let smallBytes = small.reduce(Int64(0)) { $0 + $1.size }
    print(
        "set: \(small.count) small files (\(fmt(Double(smallBytes) / 1e6, 1)) MB), \(large.count) × \(largeBytes / 1_000_000) MB"
            + (huge != nil ? ", 1 × \(rssBytes >> 30) GiB for RSS" : ""))
    var rssLines: [String] = []
    // Peak RSS at every round trip first, so that no phase before it sets the peak; then the
    // small and large files at every round trip.
    for measuresRSS in [true, false] where measuresRSS ? huge != nil : !(small.isEmpty && large.isEmpty) {
        for roundTrip in axis {
            try await roundTrip.apply(base: cloud.dcURLs[0], transport: transport)
            // A fetcher per setting, as a process started on that network would have: each one
            // finds its own number of parts in flight.
            let phases = DownloadPhases(
                cloud: cloud, fetch: MultipartFetch(transport: transport, configuration: configuration), api: api, workDir: workDir,
                roundTrip: roundTrip)
            if measuresRSS, let huge {
                rssLines.append("\(roundTrip): " + (try await phases.peakRSS(huge, rssBytes: rssBytes)))
                continue
            }
            if !small.isEmpty { try await phases.smallFiles(small, rounds: smallRounds) }
            if !large.isEmpty { try await phases.largeFiles(large, largeBytes: largeBytes, rounds: largeRounds) }
        }
    }
    print("\nPeak RSS (MultipartFetch, one file):")
    for line in rssLines { print("  " + line) }
}

/// The download benchmark's phases, each timing the product against its peers on the same cloud.
private struct DownloadPhases {
    let cloud: BenchCloud
    let fetch: MultipartFetch
    let api: BenchAPI
    let workDir: String
    let roundTrip: RoundTrip
    let info: @Sendable (MediaResourceId) -> MediaResourceStorageInfo = { _ in MediaResourceStorageInfo(contentType: .file) }

    /// The plain (HTTP GET) address of a document, for the peers.
    func plainURL(_ d: Document) -> String { cloud.dcURLs[(d.dcId - 1) % cloud.dcURLs.count] + "/plain/\(d.id)" }

    /// 1. Peak RSS while one multi-GiB file downloads (first, so nothing earlier sets the peak);
    /// returns the line the benchmark ends with.
    func peakRSS(_ huge: Document, rssBytes: Int64) async throws -> String {
        let box = try MediaBox(basePath: workDir + "/rss-media", fetcher: fetch)
        resetPeakRSS()
        let before = currentRSSMiB()
        let sampler = RSSSampler()
        let t = try await measureSettled {
            _ = try await box.fetch(CloudDocumentMediaResource(document: huge, reference: .standalone), info: info(MediaResourceId("")))
        }
        let peak = max(peakRSSFromStatusMiB(), sampler.stop())
        let settled = fetch.concurrency
        let path = box.paths(for: CloudDocumentMediaResource(document: huge, reference: .standalone).id).complete
        let size = (try? fm(path)) ?? 0
        BenchRatios.record(
            "download", "\(roundTrip.rowLabel): peak RSS, \(rssBytes >> 30) GiB file", product: fmt(peak, 1) + " MiB",
            peer: "\(fmt(rssBudgetMiB, 0)) MiB budget", ratio: rssBudgetMiB / peak, target: roundTrip.target(1))
        try? FileManager.default.removeItem(atPath: workDir + "/rss-media")
        return
            "\(fmt(Double(rssBytes) / Double(1 << 30), 0)) GiB in \(fmt(t)) s (\(fmt(Double(size) / t / 1e6, 0)) MB/s): peak RSS \(fmt(peak, 1)) MiB (RSS before \(fmt(before, 1)) MiB), target ≤ \(fmt(rssBudgetMiB, 0)) MiB; parts in flight \(settled)"
    }

    /// 2. Small files, `rounds` rounds: the target must hold in the worst of them, not on
    /// average. Peers: aria2c with 16 downloads at once, curl --parallel at 16 and at its
    /// default of 50; on loopback also curl followed by `sync` (as durable as the product).
    func smallFiles(_ small: [Document], rounds smallRounds: Int) async throws {
        let smallBytes = small.reduce(Int64(0)) { $0 + $1.size }
        let resources = small.map { CloudDocumentMediaResource(document: $0, reference: .standalone) }
        let smallURLs = small.map(plainURL)
        var table = BenchTable(
            title: "Small files: \(small.count) × 10–200 KB, \(roundTrip)", columns: ["round", "tool", "seconds", "files/s", "MB/s"])
        let peers = [
            ("aria2c -j 16 -x 1", 3.0, ["aria2c", "-q", "-i", "URLS", "-j", "16", "-x", "1", "--allow-overwrite=true", "-d", "OUT"]),
            ("curl --parallel --parallel-max 16", 1.0, ["curl", "-s", "--parallel", "--parallel-max", "16", "--output-dir", "OUT", "-K", "CFG"]),
            ("curl --parallel (its default, 50)", 1.0, ["curl", "-s", "--parallel", "--parallel-max", "50", "--output-dir", "OUT", "-K", "CFG"]),
        ]
        // For each peer, the round with the worst product / peer ratio: (ratio, product, peer).
        var worst = [(Double, Double, Double)](repeating: (Double.infinity, 0, 0), count: peers.count)
        var worstSyncedCurl = Double.infinity
        var settled: [String] = []
        // Every tool's files stay until the benchmark ends (`WorkDirectory`): removing one tool's
        // 2,000 files would slow the file creation of the tool timed after it.
        FileCreationQuiet.wait(scratch: workDir, before: "the small-file rounds")
        let tag = roundTrip.isLoopback ? "0" : "\(roundTrip.latencyMs)"
        for round in 1...smallRounds {
            let box = try MediaBox(basePath: workDir + "/small-media-\(tag)-\(round)", fetcher: fetch)
            settleDisk()
            var cpu = PhaseCPU(server: cloud.cpuSeconds)
            let t = try await measureAsync { _ = try await fetch.fetchBatch(resources, into: box, info: info) }
            let productCPU = cpu.report(client: "product")
            settled.append("\(fetch.concurrency)")
            try verify(box: box, docs: Array(small.prefix(50)), api: api)
            var rows = [("MultipartFetch → MediaBox (durable batches)", t)]
            var line = "round \(round): product \(fmt(Double(small.count) / t, 0)) files/s, parts in flight \(fetch.concurrency)"
            var peerCPU = ""
            for (i, (name, _, command)) in peers.enumerated() {
                cpu = PhaseCPU(server: cloud.cpuSeconds)
                let seconds = try runPeer(
                    workDir: workDir, name: "small-\(tag)-\(round)-\(i)", urls: smallURLs, curl: command[0] == "curl", keepOutput: true,
                    command: command)
                if i == 1 { peerCPU = cpu.report(client: "curl", isChild: true) }
                rows.append((name, seconds))
                let ratio = seconds / t
                line += "; /\(name.split(separator: " ")[0]) \(fmt(ratio))×"
                if ratio < worst[i].0 { worst[i] = (ratio, Double(small.count) / t, Double(small.count) / seconds) }
            }
            print("round \(round) CPU: \(productCPU); \(peerCPU)")
            if roundTrip.isLoopback {
                // Context, not a target: the same curl run made as durable as the product's files.
                let synced = try runPeer(
                    workDir: workDir, name: "curl-sync-small-\(round)", urls: smallURLs, curl: true, keepOutput: true, syncAfter: true,
                    command: peers[1].2)
                rows.append(("the same curl 16, then sync (durable)", synced))
                worstSyncedCurl = min(worstSyncedCurl, synced / t)
            }
            for (name, seconds) in rows {
                table.add(["\(round)", name, fmt(seconds), fmt(Double(small.count) / seconds, 0), fmt(Double(smallBytes) / seconds / 1e6, 1)])
            }
            print(line)
        }
        table.print()
        for (i, (name, target, _)) in peers.enumerated() {
            BenchRatios.record(
                "download", "\(roundTrip.rowLabel): \(small.count) small files, durable, worst of \(smallRounds)",
                product: fmt(worst[i].1, 0) + " files/s (parts in flight \(settled.last ?? "?"))", peer: fmt(worst[i].2, 0) + " files/s " + name,
                ratio: worst[i].0, target: roundTrip.target(target))
            print("ratio, worst of \(smallRounds) rounds: product / \(name) files/s = \(fmt(worst[i].0))× (target ≥ \(fmt(target, 1))×)")
        }
        print("parts in flight the product settled on, each round: \(settled.joined(separator: "; "))")
        if worstSyncedCurl.isFinite {
            print(
                "context: product / (curl, then sync) files/s = \(fmt(worstSyncedCurl))×, worst of \(smallRounds) rounds (the peer as durable as the product)")
        }
    }

    /// 3. Large files. The synced product and curl alternate for `largeRounds` rounds, and each
    /// side's median counts: one round of each swings by a tenth on two shared cores. A round 0
    /// of each goes first, untimed: the first gigabyte curl wrote through the page cache after
    /// the earlier phases sometimes took it two to three times the CPU of the next.
    func largeFiles(_ large: [Document], largeBytes: Int64, rounds largeRounds: Int) async throws {
        var largeRows: [(String, Double, Double)] = []
        let largeTotal = Double(large.reduce(Int64(0)) { $0 + $1.size })
        let resources = large.map { CloudDocumentMediaResource(document: $0, reference: .standalone) }
        let urls = large.map(plainURL)
        var productRounds: [Double] = []
        var curlRounds: [Double] = []
        var settled: [String] = []
        for round in 0...largeRounds {
            let box = try MediaBox(basePath: workDir + "/large-media", fetcher: fetch)
            settleDisk()
            var cpu = PhaseCPU(server: cloud.cpuSeconds)
            let t = try await measureAsync { _ = try await fetch.fetchBatch(resources, into: box, info: info, maxConcurrentFiles: large.count) }
            let productCPU = cpu.report(client: "product")
            settled.append("\(fetch.concurrency)")
            if round == 0 { try verify(box: box, docs: [large[0]], api: api) }
            try? FileManager.default.removeItem(atPath: workDir + "/large-media")
            // Settled before the phase starts (`runPeer` then finds nothing to sync), so curl's
            // wall time and share of the cores do not include the product's write-back.
            settleDisk()
            cpu = PhaseCPU(server: cloud.cpuSeconds)
            let c = try runPeer(
                workDir: workDir, name: "curl-large", urls: urls, curl: true,
                command: ["curl", "-s", "--output-dir", "OUT", "-K", "CFG"])
            let label = round == 0 ? "large round 0 (untimed)" : "large round \(round)"
            print("\(label): product (synced) \(fmt(t)) s, curl \(fmt(c)) s, product/curl \(fmt(c / t))×")
            print("\(label) CPU: \(productCPU); \(cpu.report(client: "curl", isChild: true))")
            guard round > 0 else { continue }
            productRounds.append(t)
            curlRounds.append(c)
        }
        let roundsLabel = largeRounds > 1 ? ", median of \(largeRounds) rounds" : ""
        let t = median(productRounds)
        largeRows.append(("MultipartFetch → MediaBox (synced on completion\(roundsLabel))", t, largeTotal / t / 1e6))
        let box2 = try MediaBox(basePath: workDir + "/large-media2", fetcher: fetch, options: MediaBox.Options(completionSync: .none))
        let t2 = try await measureSettled { _ = try await fetch.fetchBatch(resources, into: box2, info: info, maxConcurrentFiles: large.count) }
        largeRows.append(("MultipartFetch → MediaBox (no fsync, as the peers)", t2, largeTotal / t2 / 1e6))
        try? FileManager.default.removeItem(atPath: workDir + "/large-media2")
        let aria = try runPeer(
            workDir: workDir, name: "aria2c-large", urls: urls,
            command: ["aria2c", "-q", "-i", "URLS", "-j", "16", "-x", "16", "-s", "16", "-k", "1M", "--allow-overwrite=true", "-d", "OUT"])
        largeRows.append(("aria2c -j 16 -x 16 -s 16 -k 1M", aria, largeTotal / aria / 1e6))
        let curl = median(curlRounds)
        largeRows.append(("curl (one stream, sequential\(roundsLabel))", curl, largeTotal / curl / 1e6))
        if roundTrip.isLoopback {
            // The disk's own figures, once: they do not depend on the round trip.
            let ceiling = try durableWriteSeconds(bytes: Int64(largeTotal), path: workDir + "/durable-ceiling", direct: true)
            largeRows.append(("direct writes + fdatasync of as many bytes (this disk's durable ceiling)", ceiling, largeTotal / ceiling / 1e6))
            let cached = try durableWriteSeconds(bytes: Int64(largeTotal), path: workDir + "/durable-ceiling", direct: false)
            largeRows.append(("the same through the page cache (context)", cached, largeTotal / cached / 1e6))
        }
        var lt = BenchTable(title: "Large files: \(large.count) × \(largeBytes / 1_000_000) MB, \(roundTrip)", columns: ["tool", "seconds", "MB/s"])
        for r in largeRows { lt.add([r.0, fmt(r.1), fmt(r.2, 0)]) }
        lt.print()
        print("parts in flight the product settled on, each round: \(settled.joined(separator: "; "))")
        let measure = "\(roundTrip.rowLabel): \(large.count) × \(largeBytes / 1_000_000) MB, synced"
        let product = fmt(largeRows[0].2, 0) + " MB/s (parts in flight \(settled.last ?? "?"))"
        BenchRatios.record(
            "download", measure, product: product, peer: fmt(largeRows[3].2, 0) + " MB/s curl", ratio: largeRows[0].2 / largeRows[3].2,
            target: roundTrip.target(1))
        BenchRatios.record(
            "download", measure, product: product, peer: fmt(largeRows[2].2, 0) + " MB/s aria2c -x16 -s16", ratio: largeRows[0].2 / largeRows[2].2,
            target: roundTrip.target(1))
        print(
            "ratios (fsync / no fsync): product/aria2c MB/s = \(fmt(largeRows[0].2 / largeRows[2].2))× / \(fmt(largeRows[1].2 / largeRows[2].2))× (target ≥ 1.0×); product/curl = \(fmt(largeRows[0].2 / largeRows[3].2))× / \(fmt(largeRows[1].2 / largeRows[3].2))× (target ≥ 1.0×)"
        )
        if largeRows.count > 4 {
            print(
                "synced download / this disk's durable ceiling = \(fmt(largeRows[0].2 / largeRows[4].2))× (context: the peers do not sync, so a synced download cannot pass the disk's ceiling)"
            )
        }
    }
}

/// File size helper.
private func fm(_ path: String) throws -> Int64 {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
}

/// Checks stored files against the server's SHA-256.
private func verify(box: MediaBox, docs: [Document], api: BenchAPI) throws {
    for d in docs {
        let id = CloudDocumentMediaResource(document: d, reference: .standalone).id
        guard let data = box.resourceData(id), data.complete else { throw ValidationError("\(id) not complete") }
        guard let expected = api.fileSHA(d.id), try SHA256.hash(contentsOfFile: data.path).hexString == expected else {
            throw ValidationError("\(id) differs from the server's bytes")
        }
    }
}

/// Seconds to write `bytes` (1 MiB writes of non-zero bytes, so no layer can skip zeros) into a
/// new file and `fdatasync` it: what this disk allows a download that must be durable, measured
/// in the same run as the downloads. `direct` writes with direct I/O, as MediaBox writes a large
/// file whose completion syncs it (the page cache's write-back, which costs several times the
/// copy into it, is then never done); otherwise through the page cache. The file is removed
/// afterwards.
private func durableWriteSeconds(bytes: Int64, path: String, direct: Bool) throws -> Double {
    let size = PartMemoryPool.blockSize
    guard let raw = PartMemoryPool.shared.take() else { throw ValidationError("cannot allocate a write buffer") }
    defer { PartMemoryPool.shared.give(raw) }
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for i in 0..<size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        raw.storeBytes(of: UInt8(truncatingIfNeeded: state >> 56), toByteOffset: i, as: UInt8.self)
    }
    let directFlag = direct ? (DirectIO.openFlag ?? 0) : 0
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | directFlag, 0o600)
    guard fd >= 0 else { throw ValidationError("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer {
        close(fd)
        unlink(path)
    }
    settleDisk()
    // Direct writes come in whole blocks: the last one is rounded up (less than 4 KiB more).
    let alignment = Int64(DirectIO.alignment)
    let total = direct ? (bytes + alignment - 1) / alignment * alignment : bytes
    let start = DispatchTime.now().uptimeNanoseconds
    var written: Int64 = 0
    while written < total {
        let count = Int(min(Int64(size), total - written))
        let n = pwrite(fd, raw, count, off_t(written))
        guard n > 0 else { throw ValidationError("write to \(path) failed: \(String(cString: strerror(errno)))") }
        written += Int64(n)
    }
    guard fdatasync(fd) == 0 else { throw ValidationError("fdatasync of \(path) failed: \(String(cString: strerror(errno)))") }
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Runs a peer tool over `urls` into a fresh directory; returns seconds. `URLS`, `CFG` and `OUT`
/// in the command are replaced by the URL list (aria2c), the curl config and the output dir,
/// which is removed afterwards unless `keepOutput`. `syncAfter` times a `sync()` after the tool
/// exits, which makes its files as durable as the product's.
private func runPeer(
    workDir: String, name: String, urls: [String], curl: Bool = false, keepOutput: Bool = false, syncAfter: Bool = false, command: [String]
) throws -> Double {
    let out = workDir + "/" + name
    try? FileManager.default.removeItem(atPath: out)
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    let list = workDir + "/\(name).urls"
    let cfg = workDir + "/\(name).cfg"
    try urls.joined(separator: "\n").appending("\n").write(toFile: list, atomically: true, encoding: .utf8)
    try urls.map { "url = \"\($0)\"\noutput = \"\($0.split(separator: "/").last!)\"" }.joined(separator: "\n").appending("\n")
        .write(toFile: cfg, atomically: true, encoding: .utf8)
    let args = command.map { $0 == "URLS" ? list : $0 == "CFG" ? cfg : $0 == "OUT" ? out : $0 }
    settleDisk()
    let start = DispatchTime.now().uptimeNanoseconds
    try runPeerTool(args)
    if syncAfter { sync() }
    let t = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let count = (try? FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasSuffix(".aria2") }.count) ?? 0
    guard count == urls.count else { throw ValidationError("\(args[0]) produced \(count) of \(urls.count) files") }
    if !keepOutput { try? FileManager.default.removeItem(atPath: out) }
    return t
}

// MARK: RSS

/// Resets VmHWM to the current RSS (Linux: `5` into /proc/self/clear_refs).
private func resetPeakRSS() {
    if let fh = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
        fh.write(Data("5".utf8))
        try? fh.close()
    }
}

private func statusMiB(_ key: String) -> Double {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in s.split(separator: "\n") where line.hasPrefix(key + ":") {
        let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? "0") ?? 0
        return kb / 1024
    }
    return 0
}

private func currentRSSMiB() -> Double { statusMiB("VmRSS") }
private func peakRSSFromStatusMiB() -> Double { statusMiB("VmHWM") }

/// Samples VmRSS every 50 ms on its own thread; `stop()` returns the largest sample.
final class RSSSampler: @unchecked Sendable {
    // @unchecked Sendable: guarded by `lock`.
    private let lock = NSLock()
    private var running = true
    private var peak = 0.0
    private let thread: Thread

    init() {
        let box = Box()
        thread = Thread { box.sampler?.loop() }
        box.sampler = self
        thread.start()
    }

    private final class Box: @unchecked Sendable { weak var sampler: RSSSampler? }

    private func loop() {
        while lock.withLock({ running }) {
            let v = currentRSSMiB()
            lock.withLock { peak = max(peak, v) }
            usleep(50_000)
        }
    }

    func stop() -> Double {
        lock.withLock {
            running = false; return peak
        }
    }
}

// MARK: API

/// The few JSON calls the benchmark needs (history paging, file hashes).
struct BenchAPI: Sendable {
    let transport: CurlTransport
    let base: String

    func post<Req: Encodable, Res: Decodable>(_ method: CloudMethod, _ body: Req, as: Res.Type) async throws -> Res {
        let r = try await transport.send(
            HTTPRequest(
                url: base + method.path, method: .post, headers: [HTTPHeader("Content-Type", "application/json")],
                body: .data(try JSONEncoder().encode(body))))
        guard r.status == 200 else { throw ValidationError("\(method.rawValue) answered \(r.status)") }
        return try JSONDecoder().decode(Res.self, from: r.body)
    }

    func benchDocuments() async throws -> [Document] {
        let listing = try JSONDecoder().decode(DatasetListing.self, from: try await transport.get(base + "/admin/dataset").body)
        guard let peer = listing.benchPeerId else { throw ValidationError("no bench peer in the dataset") }
        var docs: [Document] = []
        var offsetId: Int32 = 0
        while true {
            let page = try await post(.getHistory, GetHistoryRequest(peerId: peer, offsetId: offsetId), as: MessagesResponse.self).messages
            docs += page.compactMap { $0.media.first?.document }
            guard let last = page.last, page.count == 100 else { break }
            offsetId = last.id
        }
        return docs
    }

    /// The server's SHA-256 of a file (blocking; used only outside timed sections).
    func fileSHA(_ id: Int64) -> String? {
        let result = BlockingResult()
        let transport = self.transport
        let url = base + "/admin/files/\(id)"
        Task {
            let r = try? await transport.get(url)
            result.set(r.flatMap { try? JSONDecoder().decode(FileInfo.self, from: $0.body) }?.sha256)
        }
        return result.wait()
    }
}
