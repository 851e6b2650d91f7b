import ArgumentParser
import CloudCore
import Foundation
import Jobs
import Postbox

/// `jobrun demo`: the product end to end on an embedded default — `cloudd` (built beside
/// `jobrun`) as a child process on loopback with a seeded dataset, a temporary data root (or
/// `--root`), and every job kind run in order through the same runner cron and systemd use, then
/// a summary.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run every job kind end to end against a local cloudd (temporary root unless --root).",
        discussion: """
            Needs the cloudd executable beside jobrun: `swift build --product cloudd` builds it.

            Examples:
              jobrun demo
              jobrun demo --root /tmp/demo-root && jobrun status --root /tmp/demo-root
              jobrun demo --encrypt   # the same on an encrypted root: every store under one random key
            """
    )

    @Option(help: "Data root to use (default: a temporary directory, removed afterwards).")
    var root: String?
    @Option(help: "Dataset seed of the embedded cloud.") var seed: UInt64 = 7
    @Flag(help: "Machine-readable JSON summary.") var json = false
    @Flag(help: "Run on an encrypted root: `jobrun init --encrypt` first, so every store is written under the root's key.")
    var encrypt = false

    func run() async throws {
        let keep = root != nil
        let rootPath = root ?? (NSTemporaryDirectory() + "jobrun-demo-\(getpid())")
        defer { if !keep { try? FileManager.default.removeItem(atPath: rootPath) } }
        let dataRoot = DataRoot(path: rootPath)
        try dataRoot.createDirectories(accounts: [0])
        var keyFile: String?
        if encrypt {
            // The demo's key lives in its own root, whatever key the environment names.
            do {
                if case .created(let path) = try RootInitialization.run(root: dataRoot, encrypt: true, environment: [:]) { keyFile = path }
            } catch {
                throw fail(error.exitCode, error.message)
            }
        }

        let cloud: DemoCloud
        do { cloud = try DemoCloud(seed: seed, uploadDirectory: rootPath + "/cloud-uploads") } catch { throw fail(.cloudUnavailable, "\(error)") }
        defer { cloud.stop() }
        try writeAccountConfig(dataRoot, cloud)
        let jobsDir = rootPath + "/jobs"
        try FileManager.default.createDirectory(atPath: jobsDir, withIntermediateDirectories: true)

        let sink = try LogSink(root: dataRoot, process: "demo", console: .off)
        let logger = JobLogger(sink: sink)
        let tempBox = TempBox(root: dataRoot, process: "demo")
        defer { tempBox.close() }
        let runner = JobRunner(
            root: dataRoot, accounts: AccountContextPool(root: dataRoot),
            logger: logger, temp: tempBox)

        if !json {
            print(
                "jobrun demo: local cloudd with \(try await cloud.fileCount()) files on \(cloud.ready.dcs.count) DCs (\(cloud.ready.dcs.map(\.url).joined(separator: ", ")))"
            )
            print("data root: \(rootPath)\(keep ? "" : " (temporary)")\(keyFile.map { ", encrypted at rest (key file \($0))" } ?? "")\n")
        }
        var results: [RunResult] = []
        var revalidation: (parents: Int, maxCallsPerParent: Int)?
        for (name, yaml) in Self.demoJobs {
            switch kind(of: yaml) {
            case UploadQueueJob.name:
                let queued = try await enqueueDemoUploads(dataRoot, accounts: runner.accounts, scratch: try tempBox.directory().path)
                if !json { print("• enqueued \(queued) files for upload (one of them secret)") }
            case RevalidateReferencesJob.name:
                try await cloud.resetCounters()
                try await cloud.expireReferences()
                try await ageStoredReferences(runner.accounts, by: DemoCloud.referenceTTL)
                if !json { print("• the cloud expired every file reference it had issued (and the demo's clock jumps past their lifetime)") }
            default:
                break
            }
            try yaml.write(toFile: "\(jobsDir)/\(name).yaml", atomically: true, encoding: .utf8)
            let job = try JobFile.load(contentsOf: URL(fileURLWithPath: "\(jobsDir)/\(name).yaml"))
            let result = await runner.run(job)
            results.append(result)
            if !json {
                print("• \(name): \(result.outcome.rawValue) in \(String(format: "%.2f", result.duration)) s\(result.message.map { " — \($0)" } ?? "")")
            }
            for line in result.report.summary where !json { print("    \(line)") }
            if kind(of: yaml) == RevalidateReferencesJob.name {
                let calls = try await cloud.counters().parents.values
                revalidation = (calls.count, calls.max() ?? 0)
            }
        }
        if json {
            printJSON(
                .object([
                    "root": .string(rootPath), "encrypted": .bool(keyFile != nil),
                    "runs": .array(
                        results.map { r in
                            .object([
                                "job": .string(r.job), "outcome": .string(r.outcome.rawValue), "seconds": .double(r.duration),
                                "counters": .object(r.report.counters.mapValues { .int($0) }),
                            ])
                        }),
                    "revalidated_parents": .int(Int64(revalidation?.parents ?? 0)),
                    "max_revalidation_calls_per_parent": .int(Int64(revalidation?.maxCallsPerParent ?? 0)),
                ]))
        } else {
            printSummary(results, root: dataRoot, keep: keep)
            if let revalidation {
                print(
                    "cloud:   \(revalidation.parents) parent entities revalidated, at most \(revalidation.maxCallsPerParent) call per parent (cloudd's counters)"
                )
            }
        }
        if results.contains(where: { $0.exitCode != .ok }) { throw ExitCode(JobExitCode.jobFailed.rawValue) }
    }

    private func kind(of yaml: String) -> String {
        let line = yaml.split(separator: "\n").first { $0.hasPrefix("kind:") } ?? ""
        return line.dropFirst("kind:".count).trimmingCharacters(in: .whitespaces)
    }

    /// Queues a few generated files (a small one, a big-file-mode one, a secret one) to the first
    /// synced chat, as `jobrun enqueue-upload` would.
    /// Moves every stored reference of account 0 `seconds` into the past, as if that long had
    /// gone by: the revalidation job selects references by when they were obtained.
    private func ageStoredReferences(_ accounts: AccountContextPool, by seconds: Int64) async throws {
        try await accounts.context(for: 0).postbox.transaction { tx in
            var records: [MediaReferenceRecord] = []
            try tx.mediaReferences.obtained(before: .max) {
                records.append($0); return true
            }
            for var record in records {
                record.obtainedAt -= seconds
                try tx.mediaReferences.set(record)
            }
        }
    }

    private func enqueueDemoUploads(_ root: DataRoot, accounts: AccountContextPool, scratch: String) async throws -> Int {
        let account = try await accounts.context(for: 0)
        let peers = try await account.postbox.read { try $0.peers.all() }
        guard let peer = peers.first else { return 0 }
        let queue = UploadQueue(postbox: account.postbox, directory: account.paths.uploads.path)
        var rng = SystemRandomNumberGenerator()
        var count = 0
        for (name, size, secret) in [("note.txt", 48 << 10, false), ("video.mp4", 12 << 20, false), ("secret.jpg", 300 << 10, true)] {
            let path = scratch + "/" + name
            var bytes = [UInt8](repeating: 0, count: size)
            for i in stride(from: 0, to: size, by: 8) { withUnsafeBytes(of: rng.next()) { for j in 0..<min(8, size - i) { bytes[i + j] = $0[j] } } }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            _ = try await queue.enqueue(UploadRequest(path: path, peerId: peer.id.rawValue, secret: secret, caption: "jobrun demo"))
            count += 1
        }
        return count
    }

    private func writeAccountConfig(_ root: DataRoot, _ cloud: DemoCloud) throws {
        let text = cloud.accountConfig
        let path = root.account(0).config.path
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw fail(.config, "cannot write \(path)")
        }
    }

    private func printSummary(_ results: [RunResult], root: DataRoot, keep: Bool) {
        print("\nSummary")
        let header = ["job", "outcome", "seconds", "what it did"]
        var rows: [[String]] = []
        for r in results {
            // The kind's own first summary line says what it did in words (counts, bytes, calls).
            let did = r.report.summary.first ?? r.message ?? ""
            rows.append([r.job, r.outcome.rawValue, String(format: "%.2f", r.duration), did])
        }
        var widths = header.map(\.count)
        for row in rows { for (i, c) in row.enumerated() { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }
        print(line(header))
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        rows.forEach { print(line($0)) }
        print("\nlogs:    \(root.logs(process: "demo").path)")
        print("metrics: \(root.metrics.path)")
        print("postbox: \(root.account(0).postboxDatabase.path)")
        if !keep { print("(the temporary root is removed on exit; pass --root DIR to keep it)") }
    }

    /// One small job file per kind, in the order a new installation would run them.
    static let demoJobs: [(String, String)] = [
        (
            "sync-history",
            """
            name: sync-history
            kind: sync-history
            timeout: 5m
            params:
              initialMessages: 40
            """
        ),
        (
            "prefetch-chat-media",
            """
            name: prefetch-chat-media
            kind: prefetch-chat-media
            timeout: 10m
            params:
              budget: 64MiB
            """
        ),
        (
            "revalidate-references",
            """
            name: revalidate-references
            kind: revalidate-references
            timeout: 5m
            params:
              # Shorter than the references' 1 h lifetime (a longer window is clamped); the demo
              # moves the stored references an hour into the past, so every one of them is due.
              window: 40m
            """
        ),
        (
            "upload-queue",
            """
            name: upload-queue
            kind: upload-queue
            timeout: 5m
            """
        ),
        (
            "time-based-cleanup",
            """
            name: time-based-cleanup
            kind: time-based-cleanup
            timeout: 5m
            params:
              maxSize: 8MiB
              immunity: 0s
            """
        ),
    ]
}
