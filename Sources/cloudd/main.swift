import ArgumentParser
import CloudProtocol
import CloudServer
import Dispatch
import Foundation

/// `cloudd`: the reference cloud server (N DCs + a CDN on loopback) for the demo, the
/// integration tests and the benchmarks. Prints one JSON line with its URLs when ready.
@main
struct Cloudd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloudd",
        abstract: "Reference cloud server: several DCs and a CDN with a seeded synthetic dataset and fault knobs.",
        discussion: "See docs/cloud-protocol.md. When ready, prints {\"dcs\":[…],\"cdn\":{…},\"admin\":\"…\"} on one stdout line.")

    @Option(help: "Dataset and file-bytes seed.") var seed: UInt64 = 1
    @Option(help: "Number of datacenters.") var dcs: Int = 3
    @Option(help: "Bind host.") var host: String = "127.0.0.1"
    @Option(help: "DC n listens on port-base+n-1, the CDN on port-base+100; 0 = ephemeral ports.") var portBase: Int = 0
    @Option(help: "File reference lifetime, seconds.") var referenceTtl: Int = 3600
    @Option(help: "Added latency per request, ms.") var latencyMs: Int = 0
    @Option(help: "Share of API/part calls answered 500 INTERNAL.") var errorRate: Double = 0
    @Option(help: "Share of API/part calls answered 420 FLOOD_WAIT_<s>.") var floodWaitRate: Double = 0
    @Option(help: "Seconds in injected FLOOD_WAIT errors.") var floodWaitSeconds: Int = 1
    @Option(help: "Share of part answers with a flipped byte.") var corruptRate: Double = 0
    @Option(help: "Share of part answers whose connection is closed mid-body.") var dropRate: Double = 0
    @Flag(help: "Every revalidation call answers 500 INTERNAL.") var failRevalidation = false
    @Option(help: "Malformed answers to inject: badJSON, unknownError, shortPart, oversizePart.") var malformed: String = "none"
    @Option(help: "Share of API calls given the malformed answer.") var malformedRate: Double = 0
    @Option(help: "Share of files served via the CDN redirect.") var cdnFraction: Double = 0
    @Option(help: "Share of CDN files needing reuploadCdnFile first.") var cdnReuploadFraction: Double = 0.5
    @Option(help: "Bandwidth of each response body and each request body, bytes/s (0 = none; K/M/G suffixes).") var bandwidth: String = "0"
    @Option(help: "Number of peers.") var peers: Int = 10
    @Option(help: "Messages per peer.") var messagesPerPeer: Int = 30
    @Option(help: "Largest regular document/video (K/M/G suffixes).") var maxMediaSize: String = "8MiB"
    @Option(help: "Benchmark files COUNT:MIN-MAX, e.g. 2000:10K-200K (repeatable).") var bulkFiles: [String] = []
    @Option(help: "Benchmark files COUNT:SIZE, e.g. 10:100M or 1:2GiB (repeatable).") var bigFiles: [String] = []
    @Option(help: "Streamable benchmark videos COUNT:SIZE or SIZE, e.g. 1:3000000 (repeatable; in the order given).")
    var benchVideos: [String] = []
    @Option(help: "Resources in one bundle message (0 = none).") var bundle: Int = 0
    @Option(help: "Number of bundle messages (each with --bundle documents).") var bundles: Int = 1
    @Option(help: "Directory for uploaded parts/files (default: a temp dir removed on exit).") var uploadDir: String?
    @Flag(
        inversion: .prefixedNo,
        help: "Compute every file's part hashes in the background from start-up (GET /admin/part-hashes tells when done), not per request.")
    var partHashesAtStart = true

    func run() async throws {
        var config = CloudServerConfig()
        config.seed = seed
        config.dcCount = dcs
        config.host = host
        config.portBase = portBase
        config.referenceTTL = referenceTtl
        config.cdnFraction = cdnFraction
        config.cdnReuploadFraction = cdnReuploadFraction
        config.uploadDirectory = uploadDir
        config.partHashesAtStart = partHashesAtStart
        guard let bw = BulkFileSpec.parseSize(bandwidth), let maxMedia = BulkFileSpec.parseSize(maxMediaSize) else {
            throw ValidationError("bad size in --bandwidth or --max-media-size")
        }
        guard let bad = MalformedAnswer(rawValue: malformed) else { throw ValidationError("bad --malformed \(malformed)") }
        config.faults = FaultConfig(
            latencyMs: latencyMs, bandwidthBytesPerSecond: bw, errorRate: errorRate,
            floodWaitRate: floodWaitRate, floodWaitSeconds: floodWaitSeconds,
            corruptRate: corruptRate, dropRate: dropRate, failRevalidation: failRevalidation,
            malformed: bad, malformedRate: malformedRate)
        config.dataset.peers = peers
        config.dataset.messagesPerPeer = messagesPerPeer
        config.dataset.maxMediaSize = maxMedia
        config.dataset.bundleSize = bundle
        config.dataset.bundleCount = bundles
        for s in bulkFiles {
            guard let spec = BulkFileSpec(parsing: s) else { throw ValidationError("bad --bulk-files \(s)") }
            config.dataset.bulkFiles.append(spec)
        }
        config.dataset.bigFiles = try exactSizes(bigFiles, option: "--big-files")
        config.dataset.benchVideos = try exactSizes(benchVideos, option: "--bench-videos")

        let server = try await CloudServer.start(config)
        print(server.readyLine)
        fflush(nil)
        FileHandle.standardError.write(Data("cloudd: \(server.fileCount) files, admin at \(server.adminURL.absoluteString)\n".utf8))
        await waitForTermination()
        await server.stop()
    }
}

/// The file sizes that `COUNT:SIZE` or `SIZE` values name, in order.
func exactSizes(_ values: [String], option: String) throws -> [Int64] {
    var sizes: [Int64] = []
    for s in values {
        if let spec = BulkFileSpec(parsing: s), spec.minSize == spec.maxSize {
            sizes += Array(repeating: spec.minSize, count: spec.count)
        } else if let v = BulkFileSpec.parseSize(s), v > 0 {
            sizes.append(v)
        } else {
            throw ValidationError("bad \(option) \(s)")
        }
    }
    return sizes
}

/// Waits for SIGTERM or SIGINT.
func waitForTermination() async {
    signal(SIGTERM, SIG_IGN)
    signal(SIGINT, SIG_IGN)
    let stream = AsyncStream<Int32> { continuation in
        let sources = [SIGTERM, SIGINT].map { sig -> any DispatchSourceSignal in
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler { continuation.yield(sig) }
            src.resume()
            return src
        }
        let keep = SourceBox(sources)
        continuation.onTermination = { _ in keep.cancel() }
    }
    for await _ in stream { break }
}

/// Keeps the signal sources alive until the stream ends.
final class SourceBox: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    init(_ s: [any DispatchSourceSignal]) { sources = s }
    func cancel() { sources.forEach { $0.cancel() } }
}
