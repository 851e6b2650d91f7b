import ArgumentParser
import CloudCore
import CloudProtocol
import Foundation
import Postbox

/// `jobrun-bench revalidate`: 100,000 expired references over 1,000 parents (1,000 messages ×
/// 100 documents in cloudd's bundle messages) refreshed by the `revalidate-references` pass:
/// calls per parent (target exactly 1), references refreshed per second, and calls made ÷ the
/// naive one call per resource.
struct RevalidateBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revalidate",
        abstract: "Revalidation of expired references: one call per parent vs one per resource.")
    @Option(help: "Parent messages.") var parents = 1000
    @Option(help: "Documents (references) per parent.") var perParent = 100
    @Flag(help: "A small run (20 parents × 50 documents) for a smoke test.") var quick = false
    @Option(help: "Revalidation calls in flight.") var concurrency = 4
    @Option(help: "A cloudd executable (default: the one next to this binary).") var cloudd: String?
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-revalidate"

    func run() throws {
        let (parents, perParent) = quick ? (20, 50) : (self.parents, self.perParent)
        let options = self
        let outcome = BlockingResult()
        Task {
            do {
                try await runRevalidateBenchmark(
                    parents: parents, perParent: perParent, concurrency: options.concurrency,
                    cloudd: options.cloudd, workDir: options.workDir)
                outcome.set(nil)
            } catch {
                outcome.set("\(error)")
            }
        }
        if let failure = outcome.wait() { throw ValidationError("revalidate benchmark failed: \(failure)") }
    }
}

func runRevalidateBenchmark(parents: Int, perParent: Int, concurrency: Int, cloudd: String?, workDir: String) async throws {
    try? FileManager.default.removeItem(atPath: workDir)
    try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
    defer { WorkDirectory.remove(workDir) }
    let executable = cloudd ?? siblingExecutable("cloudd")
    guard FileManager.default.isExecutableFile(atPath: executable) else { throw BenchError("no cloudd at \(executable) (build it or pass --cloudd)") }
    let (process, dcURLs) = try launchCloudd(
        executable,
        [
            "--port-base", "0", "--seed", "9", "--dcs", "1", "--peers", "3", "--messages-per-peer", "1",
            "--cdn-fraction", "0", "--bundle", "\(perParent)", "--bundles", "\(parents)",
        ])
    defer { process.terminate(); process.waitUntilExit() }

    var config = CloudAccountConfig(datacenters: [1: dcURLs[0]], mainDc: 1, requestTimeout: 60, maxAnswerSize: 256 << 20)
    config.retry.maxAttempts = 2
    let client = try CloudClient(config: config)
    let postbox = try Postbox(directory: workDir + "/db")
    CloudCoreTypes.registerAll()

    // "Sync": the bundle messages' references, obtained two hours ago.
    let listing: DatasetListing = try await adminCall(client, "GET", "dataset", body: Optional<Int>.none)
    guard let key = listing.bundleMessage, case .message(let peer, _)? = ParentEntity(key: key) else { throw BenchError("cloudd has no bundle") }
    let obtainedAt = Int64(Date().timeIntervalSince1970) - 7200
    var offset: Int32 = 0
    var written = 0
    while true {
        let page = try await client.getHistory(peerId: peer, offsetId: offset, limit: 20).messages
        let stored = page.map { CloudMediaConversion.message($0, obtainedAt: obtainedAt) }
        written += try await postbox.transaction { tx in
            var n = 0
            for m in stored { for r in CloudMediaConversion.referenceRecords(of: m) { try tx.mediaReferences.set(r); n += 1 } }
            return n
        }
        guard let last = page.last, page.count == 20 else { break }
        offset = last.id
    }
    print("references stored: \(written) over \(parents) parents")

    let _: OkResponse = try await adminCall(client, "POST", "references/expire", body: ExpireReferencesRequest())
    let _: OkResponse = try await adminCall(client, "POST", "counters/reset", body: [String: String]())

    var revalidationOptions = RevalidationOptions()
    revalidationOptions.maxConcurrentCalls = concurrency
    let context = RevalidationContext(client: client, postbox: postbox, options: revalidationOptions)
    let passOptions = ReferenceRevalidationPass.Options(
        window: 3600, referenceTTL: 3600, parentKinds: [.message], batchSize: 100, requestRate: nil, concurrency: concurrency,
        maxParents: 10_000_000, requestTimeout: 120)
    let report = try await ReferenceRevalidationPass(context: context, postbox: postbox, options: passOptions).run()
    let counters: CountersResponse = try await adminCall(client, "GET", "counters", body: Optional<Int>.none)
    let bundleParents = counters.parents.filter { $0.key.hasPrefix("message:\(peer):") }
    let perParentCalls = bundleParents.values
    let calls = counters.methods[CloudMethod.getMessages.rawValue] ?? 0

    var table = BenchTable(title: "Revalidation of \(written) expired references over \(report.parentsSelected) parents", columns: ["metric", "value"])
    table.add(["parents refreshed", "\(report.refreshed)"])
    table.add(["references refreshed", "\(report.referencesRefreshed)"])
    table.add(["calls per parent (min / max)", "\(perParentCalls.min() ?? 0) / \(perParentCalls.max() ?? 0)"])
    table.add(["getMessages calls", "\(calls)"])
    table.add(["seconds", fmt(report.seconds, 3)])
    table.add(["references refreshed / s", fmt(Double(report.referencesRefreshed) / max(report.seconds, 1e-9), 0)])
    table.add(["calls ÷ naive (1 per resource)", fmt(Double(calls) / Double(max(written, 1)), 5)])
    table.add(["parent revalidations ÷ naive", fmt(Double(perParentCalls.reduce(0, +)) / Double(max(written, 1)), 5)])
    table.print()
    // No outside peer revalidates references; the peer is the naive client (one call per resource).
    let maxPerParent = perParentCalls.max() ?? 0
    BenchRatios.record(
        "revalidate", "revalidations per parent (max)", product: "\(maxPerParent)", peer: "1 (target)",
        ratio: maxPerParent > 0 ? 1 / Double(maxPerParent) : 0, target: 1)
    BenchRatios.record(
        "revalidate", "calls for \(written) references",
        product: "\(calls) calls, \(fmt(Double(report.referencesRefreshed) / max(report.seconds, 1e-9), 0)) refs/s",
        peer: "\(written) naive calls", ratio: Double(written) / Double(max(calls, 1)),
        target: Double(written) / Double(max(report.parentsSelected, 1)))
    if let failure = report.cloudFailure { throw BenchError("cloud failure: \(failure)") }
}

/// An admin call on DC 1 through the client's transport.
private func adminCall<Body: Encodable, Answer: Decodable>(_ client: CloudClient, _ method: String, _ path: String, body: Body?) async throws -> Answer {
    guard let base = client.config.baseURL(ofDc: 1) else { throw BenchError("no DC 1") }
    let request = HTTPRequest(
        url: base + "/admin/" + path, method: method == "POST" ? .post : .get,
        headers: body == nil ? [] : [HTTPHeader("Content-Type", "application/json")],
        body: try body.map { RequestBody.data(try JSONEncoder().encode($0)) } ?? RequestBody.none)
    let response = try await client.transport.send(request)
    guard response.status == 200 else { throw BenchError("admin \(path): HTTP \(response.status)") }
    return try JSONDecoder().decode(Answer.self, from: response.body)
}
