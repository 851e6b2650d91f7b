import ArgumentParser
import CloudCore
import CloudProtocol
import CloudServer
import ConfinedFiles
import Foundation
import MediaBox

/// `jobrun-bench video-prefix`: header-first prefixes of streamable videos into a MediaBox
/// against curl range requests and aria2c (from the cloud's prefix URL) for the same prefixes
/// from the same cloud, and the time to a
/// video's header at maximum priority while a large file downloads in the background.
struct VideoPrefixBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "video-prefix",
        abstract: "Video prefixes (MediaBox ranged fetch, header first) vs curl -r and aria2c; header time under a background fetch.")

    @Option(help: "Streamable videos in the set.") var videos = 200
    @Option(help: "Prefix fetched of each video, MiB.") var prefixMib = 2
    @Option(help: "Size of the background file, MB (0 skips the header-time measure).") var backgroundMb = 1000
    @Option(help: "Files fetched in parallel (the product's tasks, curl's --parallel-max, aria2c's -j).") var parallel = 16
    @Option(help: "Rounds of the prefix fetches (the product and each peer in turn); medians are reported.") var rounds = 3
    @Option(help: "A cloudd executable to serve from (default: the one next to this binary, else in-process).") var cloudd: String?

    func run() throws {
        let options = self
        let outcome = BlockingResult()
        Task {
            do {
                try await options.measure()
                outcome.set(nil)
            } catch {
                outcome.set("\(error)")
            }
        }
        if let failure = outcome.wait() { throw ValidationError("video-prefix benchmark failed: \(failure)") }
    }

    private func measure() async throws {
        let prefix = Int64(prefixMib) << 20
        var c = CloudServerConfig()
        c.seed = 11
        c.dcCount = 2
        c.dataset.peers = 1
        c.dataset.messagesPerPeer = 1
        c.dataset.bigFiles = backgroundMb > 0 ? [Int64(backgroundMb) * 1_000_000] : []
        // 3 to 8 MB, spread evenly: every video is larger than the prefix.
        c.dataset.benchVideos = (0..<videos).map { 3_000_000 + Int64($0) * 5_000_000 / Int64(max(1, videos)) }
        let cloud = try await BenchCloud.start(c, cloudd: cloudd)
        do {
            try await measure(from: cloud, prefix: prefix)
        } catch {
            await cloud.stop()
            throw error
        }
        await cloud.stop()
    }

    private func measure(from cloud: BenchCloud, prefix: Int64) async throws {
        let dcURLs = cloud.dcURLs
        let transport = try CurlTransport()
        let docs = try await BenchAPI(transport: transport, base: dcURLs[0]).benchDocuments()
        let set = docs.filter { ($0.headerSize ?? 0) > 0 }
        let background = docs.first { $0.size == Int64(backgroundMb) * 1_000_000 }
        print("set: \(set.count) streamable videos, \(prefixMib) MiB prefix each; \(parallel) in parallel")
        let work = NSTemporaryDirectory() + "jobrun-bench-video-prefix-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { WorkDirectory.remove(work) }
        var datacenters: [Int: String] = [:]
        for (i, u) in dcURLs.enumerated() { datacenters[i + 1] = u }
        // Counted where requests leave: how many parts each prefix really took.
        let counting = RequestCountingTransport(transport)
        let fetcher = MultipartFetch(transport: counting, configuration: MultipartFetchConfiguration(datacenters: datacenters))
        var productRequests: [Int] = []

        /// Seconds the product takes to fetch every prefix into a new MediaBox at `path`:
        /// ranged fetches, header first, checked to hold each prefix. The store is prepared
        /// untimed as a store in use is: with its shard folders, which a new store creates one by
        /// one with the first file that needs each (as curl's output folder is made before its
        /// clock starts).
        func timeProduct(_ path: String) async throws -> Double {
            let box = try MediaBox(basePath: path, fetcher: fetcher)
            let resources = try box.locationDirectory(.resources)
            for shard in MediaShard.names { _ = try resources.directory(shard, create: true) }
            settleDisk()
            let sentBefore = counting.sent
            let start = DispatchTime.now().uptimeNanoseconds
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                func add() {
                    guard next < set.count else { return }
                    let resource = CloudDocumentMediaResource(document: set[next], reference: .standalone)
                    next += 1
                    group.addTask { _ = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [0..<prefix], priority: .default) }
                }
                for _ in 0..<parallel { add() }
                while try await group.next() != nil { add() }
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            productRequests.append(counting.sent - sentBefore)
            for d in set {
                let held = try required(box.heldRanges(CloudDocumentMediaResource(document: d, reference: .standalone).id), "\(d.id)")
                guard held.ranges.contains(0..<prefix) else { throw BenchError("video \(d.id): prefix not held: \(held.ranges)") }
            }
            return seconds
        }

        /// Seconds a peer tool takes to fetch every prefix into its own folder from `list` (given
        /// to `argv` with the folder), checked to have written each prefix whole.
        func timePeer(_ name: String, list: String, _ argv: (_ list: String, _ out: String) -> [String]) throws -> Double {
            let out = work + "/" + name
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let listFile = work + "/" + name + ".list"
            try list.write(toFile: listFile, atomically: true, encoding: .utf8)
            settleDisk()
            let t0 = DispatchTime.now().uptimeNanoseconds
            try runPeerTool(argv(listFile, out))
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
            let files = try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasSuffix(".aria2") }
            guard files.count == set.count,
                try files.allSatisfy({ try FileManager.default.attributesOfItem(atPath: out + "/" + $0)[.size] as? Int64 == prefix })
            else {
                throw BenchError("\(name) fetched \(files.count) of \(set.count) prefixes")
            }
            return seconds
        }
        func url(_ d: Document) -> String { "\(dcURLs[(d.dcId - 1) % dcURLs.count])/plain/\(d.id)" }

        // Rounds of the three in turn, each into fresh folders (kept until the end, so that no
        // side creates its files just after another's were deleted): on a shared machine one
        // timing alone says more about the neighbours than about the tools.
        var productTimes: [Double] = []
        var curlTimes: [Double] = []
        var ariaTimes: [Double] = []
        for round in 0..<max(1, rounds) {
            productTimes.append(try await timeProduct(work + "/media-\(round)"))
            // curl: the same prefixes with range requests from the plain route.
            curlTimes.append(
                try timePeer("curl-\(round)", list: set.map { "url = \"\(url($0))\"\noutput = \"\($0.id)\"\n" }.joined()) { list, out in
                    ["curl", "-s", "--parallel", "--parallel-max", "\(parallel)", "-r", "0-\(prefix - 1)", "--output-dir", out, "-K", list]
                })
            // aria2c has no byte-range option (a `Range` header given with --header brings the right
            // bytes, but aria2c then fails the download as short of the whole file): it fetches each
            // prefix as a whole file from the cloud's prefix URL (`?prefix=N`), the same bytes.
            ariaTimes.append(
                try timePeer("aria2c-\(round)", list: set.map { "\(url($0))?prefix=\(prefix)\n  out=\($0.id)\n" }.joined()) { list, out in
                    [
                        "aria2c", "-q", "-i", list, "-j", "\(parallel)", "-x", "1", "--auto-save-interval=0", "--file-allocation=none",
                        "--allow-overwrite=true", "-d", out,
                    ]
                })
        }
        let partLimit = fetcher.concurrency
        let product = median(productTimes)
        let curl = median(curlTimes)
        let aria = median(ariaTimes)
        func each(_ xs: [Double]) -> String { xs.map { fmt($0) }.joined(separator: " ") }
        print("  each round, s: MediaBox \(each(productTimes)); curl \(each(curlTimes)); aria2c \(each(ariaTimes))")
        let mb = Double(Int64(set.count) * prefix) / 1e6
        print("median of \(productTimes.count) rounds:")
        print("MediaBox ranged fetch (header first): \(fmt(product)) s, \(fmt(mb / product, 0)) MB/s")
        print("curl --parallel-max \(parallel) -r 0-\(prefix - 1): \(fmt(curl)) s, \(fmt(mb / curl, 0)) MB/s")
        print("aria2c -j \(parallel) (prefix URL, no control-file saves): \(fmt(aria)) s, \(fmt(mb / aria, 0)) MB/s")
        print("  MediaBox's shared part limit after the prefixes: \(partLimit)")
        let perVideo = productRequests.map { fmt(Double($0) / Double(max(1, set.count)), 1) }.joined(separator: " ")
        print("  MediaBox's requests per video, each round: \(perVideo) (curl and aria2c: 1)")
        print(
            "(all: the same bytes from the same cloud, none synced to disk, into folders made before the clock starts: "
                + "MediaBox's store with its \(MediaShard.count) shard folders, as a store in use has them. MediaBox also verifies "
                + "each part's SHA-256, records each range in the partial file's extended attribute after its data (safe "
                + "against a killed process) and indexes each prefix in StorageBox; curl and aria2c write plain files)")
        let faster = min(curl, aria)
        BenchRatios.record(
            "video-prefix", "\(set.count) videos × \(prefixMib) MiB prefix (median of \(productTimes.count) rounds)", product: fmt(mb / product, 0) + " MB/s",
            peer: fmt(mb / faster, 0) + (curl <= aria ? " MB/s curl -r" : " MB/s aria2c"), ratio: faster / product, target: 1)

        // Header time: a maximum-priority header while a large file downloads, against idle.
        // Medians of nine headers each (other videos than the prefix set's: nothing cached).
        let samples = 9
        guard let background, set.count >= 2 * samples else { return }
        func headerSeconds(_ d: Document, in box: MediaBox) async throws -> Double {
            let resource = CloudDocumentMediaResource(document: d, reference: .standalone)
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = try await box.fetch(resource, info: MediaResourceStorageInfo(), ranges: [0..<resource.headerSize], priority: .maximum)
            return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        }
        let fresh = try MediaBox(basePath: work + "/media-header", fetcher: fetcher)
        var idleTimes: [Double] = []
        for d in set.prefix(samples) { idleTimes.append(try await headerSeconds(d, in: fresh)) }
        let idle = median(idleTimes)
        let big = CloudDocumentMediaResource(document: background, reference: .standalone)
        let running = Task { try await fresh.fetch(big, info: MediaResourceStorageInfo()) }
        while (fresh.heldRanges(big.id)?.ranges.totalBytes ?? 0) < 50_000_000 { try await Task.sleep(for: .milliseconds(20)) }
        var busyTimes: [Double] = []
        for d in set.dropFirst(samples).prefix(samples) { busyTimes.append(try await headerSeconds(d, in: fresh)) }
        let busy = median(busyTimes)
        let stillRunning = (fresh.heldRanges(big.id)?.ranges.totalBytes ?? 0) < background.size
        running.cancel()
        _ = try? await running.value
        func spread(_ xs: [Double]) -> String { xs.sorted().map { fmt($0 * 1000, 1) }.joined(separator: " ") }
        print(
            "header at maximum priority (median of \(samples)): idle \(fmt(idle * 1000, 1)) ms, during a \(backgroundMb) MB background fetch \(fmt(busy * 1000, 1)) ms"
                + (stillRunning ? "" : " (the background fetch had finished: not a valid measure)"))
        print("  each, ms: idle \(spread(idleTimes)); during the background fetch \(spread(busyTimes))")
        BenchRatios.record(
            "video-prefix", "time to a header during a \(backgroundMb) MB fetch (medians of \(samples) headers each; target < 2× idle)",
            product: fmt(busy * 1000, 1) + " ms", peer: fmt(idle * 1000, 1) + " ms idle", ratio: 2 * idle / busy, target: 1)
    }
}

/// A value or a benchmark error naming what was missing.
private func required<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw BenchError("missing: \(what)") }
    return value
}
