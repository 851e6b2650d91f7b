import ArgumentParser
import CloudCore
import CloudCrypto
import CloudServer
import Foundation
import ServerFixtures

/// `jobrun-bench s3`: staging into an S3-compatible bucket and reading back by range, the
/// product's `S3FileUpload` / `S3Client` against `aws s3 cp` (awscli) to the same server in the
/// same run, on the same bytes.
struct S3Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "s3",
        abstract: "S3 staging (multipart, per-part SHA-256) and ranged reads vs aws s3 cp to the same server.")
    @Option(help: "Size of the large file in MB (10^6 bytes).") var largeMb = 1000
    @Option(help: "Small files (10–200 KB).") var smallFiles = 500
    @Option(
        help:
            "Most requests in flight (parts of the large file, its ranges, small files); how many are follows the measured throughput (AdaptiveConcurrency)."
    )
    var maxInFlight = 64
    @Option(help: "Files in flight of the shared-tier section.") var concurrency = 8
    @Option(help: "Part size and read range in MiB.") var partMib = 8
    @Option(help: "Rounds of every measure; the tool that goes first alternates, and each tool's best round counts.") var rounds = 2
    @Option(help: "An S3 endpoint to use (credentials from AWS_*); default: a moto_server started for the run.")
    var endpoint: String?
    @Option(help: "Bucket (created when missing).") var bucket = "jobrun-bench"
    @Option(help: "Small files (10–200 KB) of the shared-tier section; 0 with --tier-large-files 0 skips it.") var tierSmallFiles = 200
    @Option(help: "Large files of the shared-tier section.") var tierLargeFiles = 4
    @Option(help: "Size of each large file of the shared-tier section in MB.") var tierLargeMb = 16
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-s3"
    @Option(
        help:
            "Round trips MS:BANDWIDTH (comma-separated): the delayed ones go through a delaying proxy in front of the server, which both tools use; 0:0 = direct, context only."
    )
    var roundTrips = RoundTrip.defaultAxis

    func run() throws {
        let options = self
        let outcome = BlockingResult()
        Task {
            do {
                try await S3Benchmark(options: options).run()
                outcome.set(nil)
            } catch {
                outcome.set("\(error)")
            }
        }
        if let failure = outcome.wait() { throw ValidationError("s3 benchmark failed: \(failure)") }
    }
}

struct S3Benchmark {
    let options: S3Bench

    /// The bytes both tools move: one large file and a folder of small ones.
    private struct Files {
        let large: String
        let largeSize: Int64
        let smallDir: String
        let smallBytes: Int64
    }

    /// Each measure's rounds.
    private struct Measures {
        var largePut = TimedPairs(), largeGet = TimedPairs(), smallPut = TimedPairs(), smallGet = TimedPairs()
    }

    /// The product's requests in flight, as its last round settled them (`AdaptiveConcurrency`),
    /// shared by the rounds' closures.
    private final class InFlight: @unchecked Sendable {
        var largePut = "-", largeGet = "-", smallPut = "-", smallGet = "-"
    }

    func run() async throws {
        let fm = FileManager.default
        try? fm.removeItem(atPath: options.workDir)
        try fm.createDirectory(atPath: options.workDir, withIntermediateDirectories: true)
        defer { WorkDirectory.remove(options.workDir) }
        guard let aws = SystemCommand.onPath("aws") else { throw BenchError("aws (awscli) is not on PATH: scripts/install-deps.sh --bench") }

        var server: Process? = nil
        defer {
            if let server, server.isRunning {
                kill(server.processIdentifier, SIGKILL)
                server.waitUntilExit()
            }
        }
        let endpointURL: String
        var env = ProcessInfo.processInfo.environment
        if let given = options.endpoint {
            endpointURL = given
        } else {
            let (p, port) = try startMoto()
            server = p
            endpointURL = "http://127.0.0.1:\(port)"
            env["AWS_ACCESS_KEY_ID"] = "bench"
            env["AWS_SECRET_ACCESS_KEY"] = "bench"
            print("server: moto_server child process (pid \(p.processIdentifier)) on \(endpointURL)")
        }
        env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] ?? "us-east-1"
        let direct = try await makeBucket(endpointURL: endpointURL, environment: env)
        let files = try makeFiles()
        // Both tools create files in the timed rounds (the server's spooled parts, the small
        // files read back): like the download and upload benchmarks, start once that is quick.
        FileCreationQuiet.wait(scratch: options.workDir, before: "the timed rounds")
        print(
            "large file \(files.largeSize) bytes, \(options.smallFiles) small files (\(files.smallBytes) bytes), parts \(options.partMib) MiB, at most \(options.maxInFlight) in flight"
        )
        let awsEnvironment = env
        // The delayed settings reach the server through one proxy (cloudd's delay before every
        // answer and pace per body; S3 servers have no such knobs), the product and aws alike.
        guard let upstream = URLComponents(string: endpointURL), let upstreamPort = upstream.port else {
            throw BenchError("the endpoint \(endpointURL) names no port")
        }
        let proxy = try await DelayingProxy.start(upstreamHost: upstream.host ?? "127.0.0.1", upstreamPort: upstreamPort)
        let proxyURL = "http://127.0.0.1:\(proxy.port)"
        let delayed = try client(endpointURL: proxyURL, environment: env)
        for roundTrip in try RoundTrip.parse(options.roundTrips) {
            proxy.current = NetworkDelay(latencyMs: roundTrip.latencyMs, bandwidth: roundTrip.bandwidth)
            let url = roundTrip.isLoopback ? endpointURL : proxyURL
            print("\n──── round trip: \(roundTrip)" + (roundTrip.isLoopback ? " (straight to the server)" : " (through the delaying proxy at \(url))"))
            // `aws s3 cp` with `arguments`, on this server.
            func awsCopy(_ arguments: [String]) throws {
                try runPeerTool(
                    [aws, "--endpoint-url", url, "--only-show-errors", "s3", "cp"] + arguments, environment: awsEnvironment, showErrors: true)
            }
            let rssBefore = peakRSSMiB()
            let inFlight = InFlight()
            let measures = try await timeRounds(
                roundTrip.isLoopback ? direct : delayed, files, tag: "\(roundTrip.latencyMs)", inFlight: inFlight, awsCopy: awsCopy)
            let rssAfter = peakRSSMiB()
            report(measures, files, roundTrip: roundTrip, inFlight: inFlight)
            print("jobrun peak RSS: \(fmt(rssBefore, 1)) MiB before the large file, \(fmt(rssAfter, 1)) MiB after staging and reading it back")
        }
        await proxy.stop()
        let s3 = direct

        if options.tierSmallFiles + options.tierLargeFiles > 0 {
            try await runSharedTierBenchmark(
                s3: s3, smallFiles: options.tierSmallFiles, largeFiles: options.tierLargeFiles, largeMB: options.tierLargeMb,
                workDir: options.workDir, concurrency: options.concurrency)
        }
    }

    /// A moto_server child on a free loopback port, and the port.
    private func startMoto() throws -> (Process, Int) {
        guard let moto = SystemCommand.onPath("moto_server") else {
            throw BenchError("moto_server is not on PATH: scripts/install-deps.sh --bench (pip install 'moto[server]')")
        }
        let port = try FreePort.pick()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: moto)
        p.arguments = ["-H", "127.0.0.1", "-p", String(port)]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, port)
    }

    /// The product's client for the bucket at `endpointURL`.
    private func client(endpointURL: String, environment env: [String: String]) throws -> S3Client {
        guard let credentials = try S3Credentials.fromEnvironment(env) else { throw S3CredentialsError.none }
        return S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: endpointURL, name: options.bucket, region: env["AWS_DEFAULT_REGION"]!),
            credentials: credentials)
    }

    /// The product's client for the bucket, created (waiting up to 30 s for the server to answer).
    private func makeBucket(endpointURL: String, environment env: [String: String]) async throws -> S3Client {
        let s3 = try client(endpointURL: endpointURL, environment: env)
        let deadline = Date().addingTimeInterval(30)
        while true {
            do {
                try await s3.createBucket()
                return s3
            } catch  where Date() < deadline {
                try await Task.sleep(nanoseconds: 100_000_000)
            }
        }
    }

    /// The bytes: a large file and `smallFiles` small ones, of a cheap non-repeating pattern.
    private func makeFiles() throws -> Files {
        let largeSize = Int64(options.largeMb) * 1_000_000
        let large = options.workDir + "/large.bin"
        try writePattern(large, size: largeSize, seed: 1)
        let smallDir = options.workDir + "/small"
        try FileManager.default.createDirectory(atPath: smallDir, withIntermediateDirectories: true)
        var smallBytes: Int64 = 0
        for i in 0..<options.smallFiles {
            let size = Int64(10_000 + (i * 7919) % 190_000)
            smallBytes += size
            try writePattern(smallDir + "/f\(i)", size: size, seed: UInt64(i + 2))
        }
        return Files(large: large, largeSize: largeSize, smallDir: smallDir, smallBytes: smallBytes)
    }

    private func timeRounds(
        _ s3: S3Client, _ files: Files, tag: String, inFlight: InFlight, awsCopy: ([String]) throws -> Void
    ) async throws -> Measures {
        let fm = FileManager.default
        let (large, largeSize, smallDir) = (files.large, files.largeSize, files.smallDir)
        let partSize = Int64(options.partMib) << 20
        // Each measure is taken in every round by both tools, one after the other. The order
        // alternates (the product first in even rounds, awscli in odd ones) and each tool's best
        // round counts: a slow moment of the shared server or disk then costs the tool it falls
        // on one round, not the comparison.
        guard options.rounds >= 1 else { throw BenchError("--rounds must be at least 1") }
        let upload = S3FileUpload(client: s3, partSize: partSize, multipartThreshold: partSize, concurrentParts: options.maxInFlight)
        let maxInFlight = options.maxInFlight
        var m = Measures()
        let names = (0..<options.smallFiles).map { "f\($0)" }
        for round in 0..<options.rounds {
            let productFirst = round % 2 == 0
            // 1. Large file into the bucket.
            var staged: S3FileUpload.Result? = nil
            try await m.largePut.time(productFirst: productFirst) {
                staged = try await upload.upload(
                    file: large, to: "product/\(tag)-\(round)/large", journalPath: options.workDir + "/large-\(tag)-\(round).journal")
                inFlight.largePut = staged?.partsInFlight.map { "\($0)" } ?? "-"
            } peer: {
                try awsCopy([large, "s3://\(options.bucket)/peer/\(tag)-\(round)/large"])
            }

            // 2. Large file back by ranged GETs; the product's copy is checked against what it staged.
            let (productBack, peerBack) = (options.workDir + "/large.product-back", options.workDir + "/large.peer-back")
            try await m.largeGet.time(productFirst: productFirst) {
                let window = AdaptiveConcurrency(initial: 4, ceiling: maxInFlight)
                try await rangedDownload(s3, key: "product/\(tag)-\(round)/large", size: largeSize, partSize: partSize, to: productBack, window: window)
                inFlight.largeGet = "\(window.snapshot)"
            } peer: {
                try awsCopy(["s3://\(options.bucket)/peer/\(tag)-\(round)/large", peerBack])
            }
            guard try SHA256.hash(contentsOfFile: productBack) == staged?.sha256 else {
                throw BenchError("the large file read back differs from what was staged")
            }
            try fm.removeItem(atPath: productBack)
            try fm.removeItem(atPath: peerBack)

            // 3. Small files in and out. Each tool reads them back into its own folder, and both
            // stay until the benchmark ends (`WorkDirectory`).
            try await m.smallPut.time(productFirst: productFirst) {
                let window = AdaptiveConcurrency(initial: 8, ceiling: maxInFlight)
                _ = try await window.map(names) { name in
                    let data = try Data(contentsOf: URL(fileURLWithPath: smallDir + "/" + name))
                    try await s3.putObject("product/\(tag)-\(round)/small/" + name, body: .data(data), sha256: CloudCrypto.SHA256.hash(data))
                    return ((), Int64(data.count))
                }
                inFlight.smallPut = "\(window.snapshot)"
            } peer: {
                try awsCopy(["--recursive", smallDir, "s3://\(options.bucket)/peer/\(tag)-\(round)/small/"])
            }
            let smallBack = options.workDir + "/small-back-\(tag)-\(round)"
            try fm.createDirectory(atPath: smallBack, withIntermediateDirectories: true)
            try await m.smallGet.time(productFirst: productFirst) {
                let window = AdaptiveConcurrency(initial: 8, ceiling: maxInFlight)
                _ = try await window.map(names) { name in
                    let fd = open(smallBack + "/" + name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                    guard fd >= 0 else { throw BenchError("cannot create \(name)") }
                    defer { close(fd) }
                    let r = try await s3.getObject("product/\(tag)-\(round)/small/" + name, to: .fileDescriptor(fd, offset: 0))
                    return ((), r.bytesReceived)
                }
                inFlight.smallGet = "\(window.snapshot)"
            } peer: {
                try awsCopy(["--recursive", "s3://\(options.bucket)/peer/\(tag)-\(round)/small/", smallBack + "-peer"])
            }
        }
        return m
    }

    /// The table of each measure's best round, and the ratios.
    private func report(_ m: Measures, _ files: Files, roundTrip: RoundTrip, inFlight: InFlight) {
        var table = BenchTable(
            title: "S3 staging and ranged reads, \(roundTrip) (same server, same bytes; best of \(options.rounds) rounds, the first tool alternating)",
            columns: ["measure", "jobrun s", "aws s3 cp s", "ratio", "jobrun MB/s", "jobrun in flight (last round)", "jobrun / aws s3 cp s, every round"])
        func row(_ name: String, _ pairs: TimedPairs, _ bytes: Int64, inFlight: String, peerName: String = "aws s3 cp") {
            let (product, peer) = (pairs.product.min()!, pairs.peer.min()!)
            let rounds = zip(pairs.product, pairs.peer).map { "\(fmt($0)) / \(fmt($1))" }.joined(separator: ", ")
            table.add([name, fmt(product), fmt(peer), fmt(peer / product) + "x", fmt(Double(bytes) / 1e6 / product, 1), inFlight, rounds])
            BenchRatios.record(
                "s3", "\(roundTrip.rowLabel): \(name)", product: fmt(product) + " s", peer: fmt(peer) + " s \(peerName)", ratio: peer / product,
                target: roundTrip.target(1.0))
        }
        row("large put", m.largePut, files.largeSize, inFlight: inFlight.largePut)
        row("large get (ranges)", m.largeGet, files.largeSize, inFlight: inFlight.largeGet)
        row("\(options.smallFiles) small put", m.smallPut, files.smallBytes, inFlight: inFlight.smallPut, peerName: "aws s3 cp --recursive")
        row("\(options.smallFiles) small get", m.smallGet, files.smallBytes, inFlight: inFlight.smallGet, peerName: "aws s3 cp --recursive")
        table.print()
    }
}

/// One measure's wall-clock seconds per round, for each tool.
private struct TimedPairs {
    var product: [Double] = []
    var peer: [Double] = []

    /// Times both tools once (disk settled before each), in the order given.
    mutating func time(productFirst: Bool, product: () async throws -> Void, peer: () async throws -> Void) async throws {
        if productFirst {
            self.product.append(try await measureSettled(product))
            self.peer.append(try await measureSettled(peer))
        } else {
            self.peer.append(try await measureSettled(peer))
            self.product.append(try await measureSettled(product))
        }
    }
}

/// Reads `size` bytes of `key` into a new file at `path` by `partSize` ranges, as many in flight
/// as `window` allows, each written at its offset (memory flat in the file's size).
func rangedDownload(_ s3: S3Client, key: String, size: Int64, partSize: Int64, to path: String, window: AdaptiveConcurrency) async throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw BenchError("cannot create \(path)") }
    defer { close(fd) }
    let offsets = Array(stride(from: Int64(0), to: size, by: Int(partSize)))
    _ = try await window.map(offsets) { offset in
        let length = min(partSize, size - offset)
        let r = try await s3.getObject(
            key, range: HTTPRange(offset: offset, length: length), to: .fileDescriptor(fd, offset: offset, maxLength: length))
        guard r.bytesReceived == length else { throw BenchError("range at \(offset): \(r.bytesReceived) of \(length) bytes") }
        return ((), length)
    }
}

/// Runs `body` for every element, at most `limit` at a time.
func forEachConcurrently<T: Sendable>(_ items: [T], limit: Int, _ body: @escaping @Sendable (T) async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var running = 0
        for item in items {
            if running >= limit {
                try await group.next()
                running -= 1
            }
            group.addTask { try await body(item) }
            running += 1
        }
        try await group.waitForAll()
    }
}

/// Writes `size` bytes of a cheap non-repeating pattern.
private func writePattern(_ path: String, size: Int64, seed: UInt64) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw BenchError("cannot create \(path)") }
    defer { close(fd) }
    var block = [UInt64](repeating: 0, count: 1 << 17)  // 1 MiB
    var written: Int64 = 0
    var x = seed &* 0x9E37_79B9_7F4A_7C15
    while written < size {
        for i in 0..<block.count {
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            block[i] = x
        }
        let n = Int(min(Int64(block.count * 8), size - written))
        let w = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, n, off_t(written)) }
        guard w == n else { throw BenchError("cannot write \(path)") }
        written += Int64(n)
    }
}
