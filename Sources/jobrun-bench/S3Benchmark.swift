import ArgumentParser
import CloudCore
import CloudCrypto
import Foundation

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
        guard let aws = findExecutable("aws") else { throw BenchError("aws (awscli) is not on PATH: scripts/install-deps.sh --bench") }

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
            guard let moto = findExecutable("moto_server") else {
                throw BenchError("moto_server is not on PATH: scripts/install-deps.sh --bench (pip install 'moto[server]')")
            }
            let port = try freeLoopbackPort()
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
        let partSize = Int64(options.partMib) << 20
        let awsBase = [aws, "--endpoint-url", endpointURL, "--only-show-errors"]
        print(
            "large file \(largeSize) bytes, \(options.smallFiles) small files (\(smallBytes) bytes), parts \(options.partMib) MiB, \(options.concurrency) in flight"
        )

        // 1. Large file into the bucket.
        let upload = S3FileUpload(client: s3, partSize: partSize, multipartThreshold: partSize, concurrentParts: options.concurrency)
        let rssBefore = peakRSSMiB()
        var result: S3FileUpload.Result? = nil
        let productPut = try await measureSettled {
            result = try await upload.upload(file: large, to: "product/large", journalPath: options.workDir + "/large.journal")
        }
        let peerPut = try await measureSettled { try runPeer(awsBase + ["s3", "cp", large, "s3://\(options.bucket)/peer/large"], env) }

        // 2. Large file back by ranged GETs.
        let back = options.workDir + "/large.back"
        let productGet = try await measureSettled { try await rangedDownload(s3, key: "product/large", size: largeSize, partSize: partSize, to: back) }
        let rssAfter = peakRSSMiB()
        let backSHA = try sha256(ofFile: back)
        guard backSHA == result?.sha256 else { throw BenchError("the large file read back differs from what was staged") }
        try fm.removeItem(atPath: back)
        let peerGet = try await measureSettled { try runPeer(awsBase + ["s3", "cp", "s3://\(options.bucket)/peer/large", back], env) }
        try fm.removeItem(atPath: back)

        // 3. Small files in and out. Each tool reads them back into its own folder, and both stay
        // until the benchmark ends (`WorkDirectory`).
        let names = (0..<options.smallFiles).map { "f\($0)" }
        let productSmallPut = try await measureSettled {
            try await forEachConcurrently(names, limit: options.concurrency) { name in
                let path = smallDir + "/" + name
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                try await s3.putObject("product/small/" + name, body: .data(data), sha256: CloudCrypto.SHA256.hash(data))
            }
        }
        let peerSmallPut = try await measureSettled {
            try runPeer(awsBase + ["s3", "cp", "--recursive", smallDir, "s3://\(options.bucket)/peer/small/"], env)
        }
        let smallBack = options.workDir + "/small-back"
        try fm.createDirectory(atPath: smallBack, withIntermediateDirectories: true)
        let productSmallGet = try await measureSettled {
            try await forEachConcurrently(names, limit: options.concurrency) { name in
                let fd = open(smallBack + "/" + name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw BenchError("cannot create \(name)") }
                defer { close(fd) }
                _ = try await s3.getObject("product/small/" + name, to: .fileDescriptor(fd, offset: 0))
            }
        }
        let peerSmallGet = try await measureSettled {
            try runPeer(awsBase + ["s3", "cp", "--recursive", "s3://\(options.bucket)/peer/small/", options.workDir + "/small-back-peer"], env)
        }

        var table = BenchTable(
            title: "S3 staging and ranged reads (same server, same bytes)", columns: ["measure", "jobrun s", "aws s3 cp s", "ratio", "jobrun MB/s"])
        func row(_ name: String, _ product: Double, _ peer: Double, _ bytes: Int64) {
            table.add([name, fmt(product), fmt(peer), fmt(peer / product) + "x", fmt(Double(bytes) / 1e6 / product, 1)])
            BenchRatios.record("s3", name, product: fmt(product) + " s", peer: fmt(peer) + " s", ratio: peer / product, target: 1.0)
        }
        row("large put", productPut, peerPut, largeSize)
        row("large get (ranges)", productGet, peerGet, largeSize)
        row("\(options.smallFiles) small put", productSmallPut, peerSmallPut, smallBytes)
        row("\(options.smallFiles) small get", productSmallGet, peerSmallGet, smallBytes)
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

private func sha256(ofFile path: String) throws -> Data {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchError("cannot open \(path)") }
    defer { close(fd) }
    var h = CloudCrypto.SHA256()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        buffer.withUnsafeBytes { h.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
    return h.finalize()
}

private func findExecutable(_ name: String) -> String? {
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
    return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// A free TCP port on 127.0.0.1 (bound, read, closed).
private func freeLoopbackPort() throws -> Int {
    let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard s >= 0 else { throw BenchError("socket failed") }
    defer { close(s) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard ok == 0 else { throw BenchError("bind failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
