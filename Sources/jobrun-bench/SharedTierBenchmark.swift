import CloudCore
import CloudCrypto
import Foundation
import MediaBox
import Postbox
import Synchronization

/// The shared-tier section of `jobrun-bench s3`: the same files into a fresh MediaBox twice in
/// one run — downloaded from `cloudd` by `MultipartFetch` (what a host without the tier does),
/// and read from the bucket through `SharedTierFetcher` after another host published them (each
/// object fetched by ranged GETs, checked against its SHA-256, then written into MediaBox).
func runSharedTierBenchmark(s3: S3Client, smallFiles: Int, largeFiles: Int, largeMB: Int, workDir: String, concurrency: Int) async throws {
    let largeBytes = Int64(largeMB) * 1_000_000
    let cloud = try await BenchCloud.start(smallFiles: smallFiles, largeFiles: largeFiles, largeBytes: largeBytes, rssBytes: 0, cloudd: nil)
    do {
        try await sharedTierBody(s3: s3, cloud: cloud, largeBytes: largeBytes, workDir: workDir, concurrency: concurrency)
    } catch {
        await cloud.stop()
        throw error
    }
    await cloud.stop()
}

private func sharedTierBody(s3: S3Client, cloud: BenchCloud, largeBytes: Int64, workDir: String, concurrency: Int) async throws {
    let transport = try CurlTransport()
    var datacenters: [Int: String] = [:]
    for (i, u) in cloud.dcURLs.enumerated() { datacenters[i + 1] = u }
    let fetch = MultipartFetch(transport: transport, configuration: MultipartFetchConfiguration(datacenters: datacenters))
    let docs = try await BenchAPI(transport: transport, base: cloud.dcURLs[0]).benchDocuments()
        .filter { $0.size <= 200_000 || $0.size == largeBytes }
    let resources = docs.map { CloudDocumentMediaResource(document: $0, reference: .standalone) }
    let bytes = docs.reduce(Int64(0)) { $0 + $1.size }
    let info = MediaResourceStorageInfo(contentType: .file)
    print("shared tier set: \(docs.count) files (\(fmt(Double(bytes) / 1e6, 1)) MB), \(concurrency) files in flight")

    let store = try Postbox(directory: workDir + "/tier-index")
    let tier = SharedMediaTier(client: s3, store: store, prefix: "tier-bench/", host: "bench", scratchDirectory: workDir + "/tier-scratch")

    // Host A: from the cloud (timed), then published (timed apart).
    let hostA = try MediaBox(basePath: workDir + "/tier-host-a", fetcher: fetch)
    let cloudSeconds = try await measureAsync {
        try await forEachConcurrently(resources, limit: concurrency) { _ = try await hostA.fetch($0, info: info) }
    }
    let publishSeconds = try await measureAsync {
        try await forEachConcurrently(resources, limit: concurrency) { r in
            guard let reader = try hostA.openForReading(r.id, touch: false) else { throw BenchError("\(r.id) is not complete on host A") }
            defer { reader.close() }
            try await tier.publish(r.id, file: reader)
        }
    }

    // Host B: an empty MediaBox behind the tier; nothing may come from the cloud.
    let reads = Mutex(0)
    let fromCloud = Mutex(0)
    let chain = SharedTierFetcher(tier: tier, cloud: fetch) { event in
        switch event {
        case .readFromTier: reads.withLock { $0 += 1 }
        default: fromCloud.withLock { $0 += 1 }
        }
    }
    let hostB = try MediaBox(basePath: workDir + "/tier-host-b", fetcher: chain)
    let tierSeconds = try await measureAsync {
        try await forEachConcurrently(resources, limit: concurrency) { _ = try await hostB.fetch($0, info: info) }
    }
    guard reads.withLock({ $0 }) == resources.count, fromCloud.withLock({ $0 }) == 0 else {
        throw BenchError("host B read \(reads.withLock { $0 }) of \(resources.count) files from the tier")
    }
    for r in resources.prefix(20) {
        guard let a = hostA.resourceData(r.id), let b = hostB.resourceData(r.id), a.complete, b.complete,
            try SHA256.hash(contentsOfFile: a.path) == SHA256.hash(contentsOfFile: b.path)
        else { throw BenchError("\(r.id) differs between the hosts") }
    }

    var table = BenchTable(
        title: "Shared-tier read vs cloud download (same \(docs.count) files, same run)", columns: ["path", "seconds", "MB/s", "files/s"])
    table.add(["cloud download (cloudd → MediaBox)", fmt(cloudSeconds), fmt(Double(bytes) / 1e6 / cloudSeconds, 1), fmt(Double(docs.count) / cloudSeconds, 0)])
    table.add([
        "publish to the bucket (host A)", fmt(publishSeconds), fmt(Double(bytes) / 1e6 / publishSeconds, 1), fmt(Double(docs.count) / publishSeconds, 0),
    ])
    table.add(["shared-tier read (bucket → MediaBox)", fmt(tierSeconds), fmt(Double(bytes) / 1e6 / tierSeconds, 1), fmt(Double(docs.count) / tierSeconds, 0)])
    table.print()
    let ratio = cloudSeconds / tierSeconds
    print("ratio: shared-tier read / cloud download speed = \(fmt(ratio))x (same files, same run)")
    // Side by side, without a target: this compares two servers (moto, a Python S3 emulator,
    // against cloudd) as much as the two paths of the product.
    BenchRatios.record(
        "s3", "shared-tier read vs cloud download", product: fmt(tierSeconds) + " s", peer: fmt(cloudSeconds) + " s cloud", ratio: ratio,
        target: nil)
}
