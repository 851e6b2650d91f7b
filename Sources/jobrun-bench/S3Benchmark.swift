import ArgumentParser
import CloudCore
import CloudCrypto
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
    @Option(help: "Requests in flight (parts of the large file, small files).") var concurrency = 8
    @Option(help: "Part size and read range in MiB.") var partMib = 8
    @Option(help: "Rounds of every measure; the tool that goes first alternates, and each tool's best round counts.") var rounds = 2
    @Option(help: "An S3 endpoint to use (credentials from AWS_*); default: a moto_server started for the run.")
    var endpoint: String?
    @Option(help: "Bucket (created when missing).") var bucket = "jobrun-bench"
    @Option(help: "Small files (10–200 KB) of the shared-tier section; 0 with --tier-large-files 0 skips it.") var tierSmallFiles = 200
    @Option(help: "Large files of the shared-tier section.") var tierLargeFiles = 4
    @Option(help: "Size of each large file of the shared-tier section in MB.") var tierLargeMb = 16
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-s3"

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
            server = p
            endpointURL = "http://127.0.0.1:\(port)"
            env["AWS_ACCESS_KEY_ID"] = "bench"
            env["AWS_SECRET_ACCESS_KEY"] = "bench"
            print("server: moto_server child process (pid \(p.processIdentifier)) on \(endpointURL)")
        }
        env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] ?? "us-east-1"
        guard let credentials = try S3Credentials.fromEnvironment(env) else { throw S3CredentialsError.none }
        let s3 = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: endpointURL, name: options.bucket, region: env["AWS_DEFAULT_REGION"]!),
            credentials: credentials)
        let deadline = Date().addingTimeInterval(30)
        while true {
            do {
                try await s3.createBucket()
                break
            } catch  where Date() < deadline {
                try await Task.sleep(nanoseconds: 100_000_000)
            }
        }

        // The bytes.
        let largeSize = Int64(options.largeMb) * 1_000_000
        let large = options.workDir + "/large.bin"
        try writePattern(large, size: largeSize, seed: 1)
        let smallDir = options.workDir + "/small"
        try fm.createDirectory(atPath: smallDir, withIntermediateDirectories: true)
        var smallBytes: Int64 = 0
        for i in 0..<options.smallFiles {
            let size = Int64(10_000 + (i * 7919) % 190_000)
            smallBytes += size
            try writePattern(smallDir + "/f\(i)", size: size, seed: UInt64(i + 2))
        }
        // Both tools create files in the timed rounds (the server's spooled parts, the small
        // files read back): like the download and upload benchmarks, start once that is quick.
        FileCreationQuiet.wait(scratch: options.workDir, before: "the timed rounds")
        let partSize = Int64(options.partMib) << 20
        let awsBase = [aws, "--endpoint-url", endpointURL, "--only-show-errors"]
        print(
            "large file \(largeSize) bytes, \(options.smallFiles) small files (\(smallBytes) bytes), parts \(options.partMib) MiB, \(options.concurrency) in flight"
        )

        // Each measure is taken in every round by both tools, one after the other. The order
        // alternates (the product first in even rounds, awscli in odd ones) and each tool's best
        // round counts: a slow moment of the shared server or disk then costs the tool it falls
        // on one round, not the comparison.
        guard options.rounds >= 1 else { throw BenchError("--rounds must be at least 1") }
        let upload = S3FileUpload(client: s3, partSize: partSize, multipartThreshold: partSize, concurrentParts: options.concurrency)
        let rssBefore = peakRSSMiB()
        var largePut = TimedPairs(), largeGet = TimedPairs(), smallPut = TimedPairs(), smallGet = TimedPairs()
        let names = (0..<options.smallFiles).map { "f\($0)" }
        for round in 0..<options.rounds {
            let productFirst = round % 2 == 0
            // 1. Large file into the bucket.
            var staged: S3FileUpload.Result? = nil
            try await largePut.time(productFirst: productFirst) {
                staged = try await upload.upload(file: large, to: "product/\(round)/large", journalPath: options.workDir + "/large-\(round).journal")
            } peer: {
                try runPeer(awsBase + ["s3", "cp", large, "s3://\(options.bucket)/peer/\(round)/large"], env)
            }

            // 2. Large file back by ranged GETs; the product's copy is checked against what it staged.
            let (productBack, peerBack) = (options.workDir + "/large.product-back", options.workDir + "/large.peer-back")
            try await largeGet.time(productFirst: productFirst) {
                try await rangedDownload(s3, key: "product/\(round)/large", size: largeSize, partSize: partSize, to: productBack)
            } peer: {
                try runPeer(awsBase + ["s3", "cp", "s3://\(options.bucket)/peer/\(round)/large", peerBack], env)
            }
            guard try SHA256.hash(contentsOfFile: productBack) == staged?.sha256 else {
                throw BenchError("the large file read back differs from what was staged")
            }
            try fm.removeItem(atPath: productBack)
            try fm.removeItem(atPath: peerBack)

            // 3. Small files in and out. Each tool reads them back into its own folder, and both
            // stay until the benchmark ends (`WorkDirectory`).
            try await smallPut.time(productFirst: productFirst) {
                try await forEachConcurrently(names, limit: options.concurrency) { name in
                    let data = try Data(contentsOf: URL(fileURLWithPath: smallDir + "/" + name))
                    try await s3.putObject("product/\(round)/small/" + name, body: .data(data), sha256: CloudCrypto.SHA256.hash(data))
                }
            } peer: {
                try runPeer(awsBase + ["s3", "cp", "--recursive", smallDir, "s3://\(options.bucket)/peer/\(round)/small/"], env)
            }
            let smallBack = options.workDir + "/small-back-\(round)"
            try fm.createDirectory(atPath: smallBack, withIntermediateDirectories: true)
            try await smallGet.time(productFirst: productFirst) {
                try await forEachConcurrently(names, limit: options.concurrency) { name in
                    let fd = open(smallBack + "/" + name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                    guard fd >= 0 else { throw BenchError("cannot create \(name)") }
                    defer { close(fd) }
                    _ = try await s3.getObject("product/\(round)/small/" + name, to: .fileDescriptor(fd, offset: 0))
                }
            } peer: {
                try runPeer(awsBase + ["s3", "cp", "--recursive", "s3://\(options.bucket)/peer/\(round)/small/", smallBack + "-peer"], env)
            }
        }
        let rssAfter = peakRSSMiB()

        var table = BenchTable(
            title: "S3 staging and ranged reads (same server, same bytes; best of \(options.rounds) rounds, the first tool alternating)",
            columns: ["measure", "jobrun s", "aws s3 cp s", "ratio", "jobrun MB/s", "jobrun / aws s3 cp s, every round"])
        func row(_ name: String, _ pairs: TimedPairs, _ bytes: Int64) {
            let (product, peer) = (pairs.product.min()!, pairs.peer.min()!)
            let rounds = zip(pairs.product, pairs.peer).map { "\(fmt($0)) / \(fmt($1))" }.joined(separator: ", ")
            table.add([name, fmt(product), fmt(peer), fmt(peer / product) + "x", fmt(Double(bytes) / 1e6 / product, 1), rounds])
            BenchRatios.record("s3", name, product: fmt(product) + " s", peer: fmt(peer) + " s", ratio: peer / product, target: 1.0)
        }
        row("large put", largePut, largeSize)
        row("large get (ranges)", largeGet, largeSize)
        row("\(options.smallFiles) small put", smallPut, smallBytes)
        row("\(options.smallFiles) small get", smallGet, smallBytes)
        table.print()
        print("jobrun peak RSS: \(fmt(rssBefore, 1)) MiB before the large file, \(fmt(rssAfter, 1)) MiB after staging and reading it back")

        if options.tierSmallFiles + options.tierLargeFiles > 0 {
            try await runSharedTierBenchmark(
                s3: s3, smallFiles: options.tierSmallFiles, largeFiles: options.tierLargeFiles, largeMB: options.tierLargeMb,
                workDir: options.workDir, concurrency: options.concurrency)
        }
    }

    private func runPeer(_ command: [String], _ env: [String: String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BenchError("\(command.prefix(5).joined(separator: " ")) … exited with \(p.terminationStatus)") }
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

/// Reads `size` bytes of `key` into a new file at `path` by `partSize` ranges, several in flight,
/// each written at its offset (memory flat in the file's size).
func rangedDownload(_ s3: S3Client, key: String, size: Int64, partSize: Int64, to path: String, inFlight: Int = 8) async throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw BenchError("cannot create \(path)") }
    defer { close(fd) }
    let offsets = Array(stride(from: Int64(0), to: size, by: Int(partSize)))
    try await forEachConcurrently(offsets, limit: inFlight) { offset in
        let length = min(partSize, size - offset)
        let r = try await s3.getObject(
            key, range: HTTPRange(offset: offset, length: length), to: .fileDescriptor(fd, offset: offset, maxLength: length))
        guard r.bytesReceived == length else { throw BenchError("range at \(offset): \(r.bytesReceived) of \(length) bytes") }
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
