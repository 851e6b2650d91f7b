import ArgumentParser
import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import Postbox

/// `jobrun-bench upload`: the product's resumable queue upload (`UploadQueue` + `MultipartUpload`,
/// durable per-part acknowledgements in Postbox, idempotent `sendMedia`) against `curl -T` to the
/// same server's plain upload endpoint, in one run, on the same bytes.
struct UploadBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "MultipartUpload (queue, parts, Postbox acks, sendMedia) vs curl -T / curl --parallel to the same cloudd.")
    @Option(help: "Size of the large file in MB (10^6 bytes).") var largeMb = 1000
    @Option(help: "Small files (10–200 KB).") var smallFiles = 500
    @Option(help: "Rounds (each runs curl and the product once; the best round of each is reported).") var rounds = 2
    @Option(
        help:
            "curl --parallel-max of the first small-file peer, and the upload-queue job's concurrency (the product's own files in flight follow its measured throughput)."
    )
    var concurrency = 16
    @Option(help: "Round trips MS:BANDWIDTH (comma-separated; cloudd's delay before every answer and pace per body; 0:0 = loopback, context only).")
    var roundTrips = RoundTrip.defaultAxis
    @Option(help: "A cloudd executable (default: the one next to this binary, else in-process).") var cloudd: String?
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-upload"
    @Option(help: "Workloads to run: large, small or both (one alone is for profiling it).") var only: UploadWorkload?

    func run() throws {
        let options = self
        let outcome = BlockingResult()
        Task {
            do {
                try await UploadBenchmark(options: options).run()
                outcome.set(nil)
            } catch {
                outcome.set("\(error)")
            }
        }
        if let failure = outcome.wait() { throw ValidationError("upload benchmark failed: \(failure)") }
    }
}

/// One half of the upload benchmark, for `--only`.
enum UploadWorkload: String, ExpressibleByArgument, Sendable {
    case large, small
}

/// The server for the upload benchmark: a `cloudd` child (its memory is not ours) or in-process.
final class UploadBenchServer: @unchecked Sendable {
    // @unchecked Sendable: immutable after start.
    let dcURLs: [String]
    let uploadDirectory: String
    private let process: Process?
    private let server: CloudServer?

    static func start(cloudd: String?, uploadDirectory: String) async throws -> UploadBenchServer {
        let executable = cloudd ?? siblingExecutable("cloudd")
        if FileManager.default.isExecutableFile(atPath: executable) {
            let (p, dcURLs) = try launchCloudd(
                executable,
                [
                    "--seed", "7", "--dcs", "2", "--peers", "2", "--messages-per-peer", "2", "--cdn-fraction", "0",
                    "--upload-dir", uploadDirectory,
                    // Nothing is downloaded here: without this, cloudd would read back and hash every
                    // sent file for download serving (a 500 MB file behind the next measurement),
                    // work the plain upload endpoint curl uses never does.
                    "--no-part-hashes-at-start",
                ])
            print("server: cloudd child process (pid \(p.processIdentifier)), uploads in \(uploadDirectory)")
            return UploadBenchServer(dcURLs: dcURLs, uploadDirectory: uploadDirectory, process: p, server: nil)
        }
        var c = CloudServerConfig()
        c.seed = 7
        c.dcCount = 2
        c.dataset.peers = 2
        c.dataset.messagesPerPeer = 2
        c.uploadDirectory = uploadDirectory
        let server = try await CloudServer.start(c)
        print("server: in-process CloudServer (its memory counts in this process's RSS)")
        return UploadBenchServer(dcURLs: server.dcURLs.map(\.absoluteString), uploadDirectory: uploadDirectory, process: nil, server: server)
    }

    private init(dcURLs: [String], uploadDirectory: String, process: Process?, server: CloudServer?) {
        self.dcURLs = dcURLs
        self.uploadDirectory = uploadDirectory
        self.process = process
        self.server = server
    }

    /// CPU seconds (user + system) the cloudd child has used so far; nil in-process.
    func cpuSeconds() -> Double? { process.flatMap { ProcStat(pid: $0.processIdentifier)?.own } }

    func stop() async {
        if let process { process.terminate(); process.waitUntilExit() }
        if let server { await server.stop() }
    }
}

/// Runs the benchmark and prints its tables.
struct UploadBenchmark {
    let options: UploadBench

    private struct Timing {
        var seconds: Double
        var bytes: Int64
        var files: Int
        var mbps: Double { Double(bytes) / seconds / 1e6 }
        var filesPerSecond: Double { Double(files) / seconds }
    }

    func run() async throws {
        let fm = FileManager.default
        let work = options.workDir
        try? fm.removeItem(atPath: work)
        try fm.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { WorkDirectory.remove(work) }
        let server = try await UploadBenchServer.start(cloudd: options.cloudd, uploadDirectory: work + "/server")
        do {
            try await body(server: server, work: work)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The bytes both tools send: one large file and many small ones.
    private struct Files {
        let large: String
        let largeBytes: Int64
        let largeSHA: String
        let small: [String]
        let smallBytes: Int64
    }

    /// Every round's timing of each method.
    private struct Rounds {
        var curlLarge: [Timing] = [], productLarge: [Timing] = [], productLargeWithEnqueue: [Timing] = [], productLargeParts: [Timing] = []
        var curlSmall: [Timing] = [], curlSmall50: [Timing] = [], productSmall: [Timing] = [], jobSmall: [Timing] = []
        var rssAfterLarge = 0.0
        /// What the product settled on in each round: parts in flight (large), files in flight (small).
        var largeWindow: [String] = [], smallWindow: [String] = []
    }

    /// What one round's phases share: the server, the product's client and the store of this round.
    private struct Round {
        let index: Int
        let server: UploadBenchServer
        let client: CloudClient
        let peer: Int64
        let postbox: Postbox
        let queue: UploadQueue
        var dc: String { server.dcURLs[0] }
    }

    private func body(server: UploadBenchServer, work: String) async throws {
        let files = try makeFiles(work: work)
        print(
            "files: 1 × \(fmt(Double(files.largeBytes) / 1e6, 0)) MB, \(files.small.count) small (\(fmt(Double(files.smallBytes) / 1e6, 1)) MB total); \(options.rounds) rounds, best of each"
        )
        let client = try makeClient(server)
        let peer = try await client.getDialogs(limit: 1).dialogs[0].peer.id
        let rssStart = peakRSSMiB()
        let jobRun = UploadJobRun(dcURLs: server.dcURLs, concurrency: options.concurrency, peer: peer, serverCPU: server.cpuSeconds)
        // The small files stay on the server until the benchmark ends (`WorkDirectory`): removing
        // one tool's 500 would slow the file creation of the tool timed after it. A large file is
        // one inode, removed at once; kept, it made the next round's large uploads slower for both.
        if options.only != .large { FileCreationQuiet.wait(scratch: work, before: "the small-file uploads") }
        var index = 0
        for roundTrip in try RoundTrip.parse(options.roundTrips) {
            try await roundTrip.apply(base: server.dcURLs[0], transport: client.transport)
            var rounds = Rounds()
            for _ in 0..<options.rounds {
                try await runRound(
                    index, server: server, client: client, peer: peer, files: files, jobRun: roundTrip.isLoopback ? jobRun : nil, work: work, into: &rounds)
                index += 1
            }
            report(rounds, files, roundTrip: roundTrip, rssStart: rssStart)
        }
    }

    /// One round of every workload at the current round trip; the upload-queue job (a process
    /// start and a data root per run) only when `jobRun` is given.
    private func runRound(
        _ index: Int, server: UploadBenchServer, client: CloudClient, peer: Int64, files: Files, jobRun: UploadJobRun?, work: String,
        into rounds: inout Rounds
    ) async throws {
        do {
            let postbox = try Postbox(directory: work + "/postbox-\(index)")
            let round = Round(
                index: index, server: server, client: client, peer: peer, postbox: postbox,
                queue: UploadQueue(postbox: postbox, directory: work + "/uploads-\(index)"))
            if options.only != .small {
                rounds.curlLarge.append(try await curlLarge(round, files))
                try await productLarge(round, files, into: &rounds)
            }
            if options.only != .large {
                rounds.curlSmall.append(try curlSmall(round, files, parallel: options.concurrency, work: work))
                rounds.curlSmall50.append(try curlSmall(round, files, parallel: 50, work: work))
                rounds.productSmall.append(try await productSmall(round, files, into: &rounds))
                if let jobRun {
                    // The same files through the upload-queue job, as an operator runs it.
                    let (js, jobCPU) = try await jobRun.run(files.small, in: work + "/job-\(index)")
                    rounds.jobSmall.append(Timing(seconds: js, bytes: files.smallBytes, files: files.small.count))
                    print("product small, upload-queue job (jobrun run, queued beforehand): \(fmt(js)) s; \(jobCPU)")
                }
            }
            printRound(index, rounds)
        }
    }

    /// One large file and `smallFiles` small ones of random bytes, written in 1 MiB blocks.
    private func makeFiles(work: String) throws -> Files {
        let largeBytes = Int64(options.largeMb) * 1_000_000
        let large = work + "/large.bin"
        try Self.writeRandom(large, size: largeBytes)
        let smallDir = work + "/small"
        try FileManager.default.createDirectory(atPath: smallDir, withIntermediateDirectories: true)
        var small: [String] = []
        var smallBytes: Int64 = 0
        for i in 0..<options.smallFiles {
            let size = Int64.random(in: 10_000...200_000)
            let path = smallDir + "/s\(i).bin"
            try Self.writeRandom(path, size: size)
            small.append(path)
            smallBytes += size
        }
        let largeSHA = try SHA256.hash(contentsOfFile: large).hexString
        return Files(large: large, largeBytes: largeBytes, largeSHA: largeSHA, small: small, smallBytes: smallBytes)
    }

    /// The product's client: one transport with the default connection limits.
    private func makeClient(_ server: UploadBenchServer) throws -> CloudClient {
        var tc = TransportConfiguration()
        tc.requestTimeout = 300
        var account = CloudAccountConfig(datacenters: [1: server.dcURLs[0], 2: server.dcURLs[1]], mainDc: 1, requestTimeout: 300)
        account.retry = CloudRetryPolicy(maxAttempts: 3, baseDelay: 0.05, maxDelay: 0.5)
        return try CloudClient(config: account, transport: CurlTransport(configuration: tc))
    }

    /// curl -T of the large file to the plain upload endpoint, checked by its SHA-256.
    private func curlLarge(_ round: Round, _ files: Files) async throws -> Timing {
        let name = "large-\(round.index)"
        settleDisk()
        // `Expect:` off: curl would otherwise wait up to 1 s for a `100 Continue` the server never sends.
        var cpu = PhaseCPU(server: round.server.cpuSeconds)
        let ct = try measure { try runPeerTool(["curl", "-s", "-H", "Expect:", "-o", "/dev/null", "-T", files.large, "\(round.dc)/plain/upload/\(name)"]) }
        print("curl large: \(cpu.report(client: "curl", isChild: true))")
        let plain = try JSONDecoder().decode(
            PlainUploadInfo.self, from: try await round.client.transport.get("\(round.dc)/admin/plain-uploads/\(name)").body)
        guard plain.sha256 == files.largeSHA else { throw ValidationError("curl upload arrived with another SHA-256") }
        try? FileManager.default.removeItem(atPath: round.server.uploadDirectory + "/plain/\(name)")
        return Timing(seconds: ct, bytes: files.largeBytes, files: 1)
    }

    /// The product on the large file: enqueue (hard link + SHA-256), then upload; checked by its
    /// SHA-256 on the server.
    private func productLarge(_ round: Round, _ files: Files, into rounds: inout Rounds) async throws {
        let partsDone = PhaseClock()
        let largeConfig = MultipartUploadConfiguration()
        settleDisk()
        var cpu = PhaseCPU(server: round.server.cpuSeconds)
        let upload = MultipartUpload(
            client: round.client, postbox: round.postbox, configuration: largeConfig,
            observer: { event in
                if case .partSent = event { partsDone.mark() }
            })
        let t0 = DispatchTime.now().uptimeNanoseconds
        let item = try await round.queue.enqueue(UploadRequest(path: files.large, peerId: round.peer))
        let t1 = DispatchTime.now().uptimeNanoseconds
        let enqueueCPU = cpu.report(client: "this process")
        let result = try await upload.upload(itemId: item.id)
        let t2 = DispatchTime.now().uptimeNanoseconds
        rounds.rssAfterLarge = max(rounds.rssAfterLarge, peakRSSMiB())
        rounds.largeWindow.append(result.partsInFlight.map { "\($0)" } ?? "?")
        print("product large, enqueue (hard link + SHA-256): \(fmt(Double(t1 - t0) / 1e9)) s; \(enqueueCPU)")
        print(
            "product large, upload: parts \(fmt(Double(partsDone.last - t1) / 1e9)) s, sendMedia (server assembly) \(fmt(Double(t2 - partsDone.last) / 1e9)) s; parts in flight \(rounds.largeWindow.last!); \(cpu.report(client: "this process"))"
        )
        let info = try JSONDecoder().decode(
            FileInfo.self, from: try await round.client.transport.get("\(round.dc)/admin/files/\(result.documentId)").body)
        guard info.sha256 == files.largeSHA, info.size == files.largeBytes else {
            throw ValidationError("the product's upload arrived with another SHA-256")
        }
        try? FileManager.default.removeItem(atPath: round.server.uploadDirectory + "/files/\(result.documentId)")
        rounds.productLarge.append(Timing(seconds: Double(t2 - t1) / 1e9, bytes: files.largeBytes, files: 1))
        rounds.productLargeWithEnqueue.append(Timing(seconds: Double(t2 - t0) / 1e9, bytes: files.largeBytes, files: 1))
        rounds.productLargeParts.append(Timing(seconds: Double(partsDone.last - t1) / 1e9, bytes: files.largeBytes, files: 1))
    }

    /// curl --parallel of the small files to the plain upload endpoint, `parallel` at once.
    private func curlSmall(_ round: Round, _ files: Files, parallel: Int, work: String) throws -> Timing {
        let config = work + "/curl-small-\(round.index)-\(parallel).cfg"
        try files.small.enumerated()
            .map { "upload-file = \"\($0.element)\"\nurl = \"\(round.dc)/plain/upload/r\(round.index)-p\(parallel)-s\($0.offset)\"\noutput = \"/dev/null\"\n" }
            .joined().write(toFile: config, atomically: true, encoding: .utf8)
        settleDisk()
        var cpu = PhaseCPU(server: round.server.cpuSeconds)
        let cs = try measure {
            try runPeerTool(["curl", "-s", "--no-progress-meter", "-H", "Expect:", "--parallel", "--parallel-max", String(parallel), "-K", config])
        }
        print("curl small, \(parallel) at once: \(cpu.report(client: "curl", isChild: true))")
        return Timing(seconds: cs, bytes: files.smallBytes, files: files.small.count)
    }

    /// The product on the small files: enqueue all (one batch: staged on every core, one
    /// transaction), then upload them with as many files in flight as the measured throughput
    /// calls for (`MultipartUpload.upload(itemIds:)`).
    private func productSmall(_ round: Round, _ files: Files, into rounds: inout Rounds) async throws -> Timing {
        settleDisk()
        var cpu = PhaseCPU(server: round.server.cpuSeconds)
        let s0 = DispatchTime.now().uptimeNanoseconds
        let ids = try await round.queue.enqueue(files.small.map { UploadRequest(path: $0, peerId: round.peer) }).map(\.id)
        let sEnqueued = DispatchTime.now().uptimeNanoseconds
        let report = try await MultipartUpload(client: round.client, postbox: round.postbox).upload(itemIds: ids)
        let s1 = DispatchTime.now().uptimeNanoseconds
        let sent = report.results.count
        guard sent == files.small.count else { throw ValidationError("only \(sent) small files sent") }
        rounds.smallWindow.append("\(report.filesInFlight)")
        print(
            "product small: enqueue \(fmt(Double(sEnqueued - s0) / 1e9)) s, upload \(fmt(Double(s1 - sEnqueued) / 1e9)) s, files in flight \(report.filesInFlight); enqueue and upload: \(cpu.report(client: "this process"))"
        )
        return Timing(seconds: Double(s1 - s0) / 1e9, bytes: files.smallBytes, files: files.small.count)
    }

    private func printRound(_ index: Int, _ rounds: Rounds) {
        var line: [String] = []
        if let c = rounds.curlLarge.last, let p = rounds.productLarge.last {
            line.append("curl \(fmt(c.mbps, 0)) MB/s, product \(fmt(p.mbps, 0)) MB/s (large)")
        }
        if let c = rounds.curlSmall.last, let c50 = rounds.curlSmall50.last, let p = rounds.productSmall.last {
            var rates =
                "curl \(options.concurrency) at once \(fmt(c.filesPerSecond, 0)) files/s, curl 50 \(fmt(c50.filesPerSecond, 0)), product \(fmt(p.filesPerSecond, 0))"
            if let j = rounds.jobSmall.last { rates += ", upload-queue job \(fmt(j.filesPerSecond, 0))" }
            line.append(rates + " (small)")
        }
        print("round \(index + 1): " + line.joined(separator: "; "))
    }

    /// The table of each method's best round at one round trip, and the ratios against curl.
    private func report(_ rounds: Rounds, _ files: Files, roundTrip: RoundTrip, rssStart: Double) {
        func best(_ t: [Timing]) -> Timing { t.min { $0.seconds < $1.seconds }! }
        var table = BenchTable(
            title: "Upload: product vs curl, same server, same bytes, \(roundTrip)", columns: ["method", "files", "MB", "seconds", "MB/s", "files/s"])
        func add(_ label: String, _ t: Timing) {
            table.add([label, String(t.files), fmt(Double(t.bytes) / 1e6, 1), fmt(t.seconds, 2), fmt(t.mbps, 1), fmt(t.filesPerSecond, 1)])
        }
        if !rounds.curlLarge.isEmpty {
            add("curl -T (plain upload), large", best(rounds.curlLarge))
            add("product MultipartUpload, large (upload)", best(rounds.productLarge))
            add("product, large (enqueue+SHA-256+upload)", best(rounds.productLargeWithEnqueue))
            add("  of which: parts acknowledged (before sendMedia)", best(rounds.productLargeParts))
        }
        if !rounds.curlSmall.isEmpty {
            add("curl --parallel \(options.concurrency), small", best(rounds.curlSmall))
            add("curl --parallel 50 (its default), small", best(rounds.curlSmall50))
            add("product, small (enqueue+upload, files in flight adaptive)", best(rounds.productSmall))
            if !rounds.jobSmall.isEmpty { add("upload-queue job, small (jobrun run, queued beforehand)", best(rounds.jobSmall)) }
        }
        table.print()
        if !rounds.curlLarge.isEmpty {
            let (product, withEnqueue, parts, curl) = (
                best(rounds.productLarge), best(rounds.productLargeWithEnqueue), best(rounds.productLargeParts), best(rounds.curlLarge)
            )
            BenchRatios.record(
                "upload", "\(roundTrip.rowLabel): \(fmt(Double(files.largeBytes) / 1e6, 0)) MB file",
                product: fmt(product.mbps, 0) + " MB/s (parts in flight \(rounds.largeWindow.last ?? "?"))",
                peer: fmt(curl.mbps, 0) + " MB/s curl -T", ratio: product.mbps / curl.mbps, target: roundTrip.target(1))
            print("ratio large (product upload / curl): \(fmt(product.mbps / curl.mbps))× (target ≥ 1.0×); with enqueue: \(fmt(withEnqueue.mbps / curl.mbps))×")
            print(
                "ratio large, parts phase only (sendMedia then waits for the server to finish hashing the file): \(fmt(parts.mbps / curl.mbps))×"
            )
            print("parts in flight the large upload settled on, each round: \(rounds.largeWindow.joined(separator: "; "))")
        }
        if !rounds.curlSmall.isEmpty {
            let product = best(rounds.productSmall)
            let count = files.small.count
            for (curl, parallel) in [(best(rounds.curlSmall), options.concurrency), (best(rounds.curlSmall50), 50)] {
                BenchRatios.record(
                    "upload", "\(roundTrip.rowLabel): \(count) small files",
                    product: fmt(product.filesPerSecond, 0) + " files/s (files in flight \(rounds.smallWindow.last ?? "?"))",
                    peer: fmt(curl.filesPerSecond, 0) + " files/s curl --parallel \(parallel)",
                    ratio: product.filesPerSecond / curl.filesPerSecond, target: roundTrip.target(1))
                print("ratio small files/s (product / curl --parallel \(parallel)): \(fmt(product.filesPerSecond / curl.filesPerSecond))× (target ≥ 1.0×)")
            }
            print("files in flight the small uploads settled on, each round: \(rounds.smallWindow.joined(separator: "; "))")
            if !rounds.jobSmall.isEmpty {
                let (job, curl) = (best(rounds.jobSmall), best(rounds.curlSmall))
                BenchRatios.record(
                    "upload", "\(roundTrip.rowLabel): \(count) small files, upload-queue job", product: fmt(job.filesPerSecond, 0) + " files/s",
                    peer: fmt(curl.filesPerSecond, 0) + " files/s curl --parallel \(options.concurrency)",
                    ratio: job.filesPerSecond / curl.filesPerSecond, target: nil)
            }
        }
        print(
            "peak RSS of this process: \(fmt(rssStart, 1)) MiB before uploading, \(fmt(rounds.rssAfterLarge, 1)) MiB after the \(fmt(Double(files.largeBytes) / 1e6, 0)) MB upload, \(fmt(peakRSSMiB(), 1)) MiB at the end (bounded: parts are sent from the file by region)"
        )
    }

    static func writeRandom(_ path: String, size: Int64) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? h.close() }
        // AES-CTR keystream: fast incompressible bytes without holding the file in memory.
        let key = SecureRandom.bytes(32), iv = SecureRandom.bytes(16)
        var offset: Int64 = 0
        let zero = Data(count: 1 << 20)
        while offset < size {
            let n = Int(min(Int64(zero.count), size - offset))
            try h.write(contentsOf: try AESCTR.crypt(zero.prefix(n), key: key, iv: iv, offset: offset))
            offset += Int64(n)
        }
    }
}

/// The time of the last `mark()` (uptime ns), set from the upload's observer.
final class PhaseClock: @unchecked Sendable {
    // @unchecked Sendable: guarded by the lock.
    private let lock = NSLock()
    private var time: UInt64 = 0
    func mark() { lock.lock(); time = DispatchTime.now().uptimeNanoseconds; lock.unlock() }
    var last: UInt64 { lock.lock(); defer { lock.unlock() }; return time }
}
