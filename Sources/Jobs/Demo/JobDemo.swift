import ConfinedFiles
import Foundation

/// `jobrun demo`'s work: a local cloud (`cloudd` as a child process, a seeded dataset), account 0
/// of a data root configured for it, and every kind of the registry run in order through the
/// same runner cron and systemd use, each on its demo job file (`JobKind.demo`) after the set-up
/// it asks for. The CLI only prints what this reports.
public final class JobDemo: @unchecked Sendable {
    /// One kind's run, and what the cloud counted for it.
    public struct Step: Sendable {
        public let result: RunResult
        /// After a run that follows `expireReferences`: how many parent entities the cloud was
        /// asked to revalidate, and the most calls any one of them got.
        public let revalidation: (parents: Int, maxCallsPerParent: Int)?
    }

    public let root: DataRoot
    /// The kinds in the order they run: the registry's.
    public let kinds: [any JobKind]
    /// The demo cloud's datacenter addresses.
    public var datacenters: [String] { cloud.ready.dcs.map(\.url) }
    /// Where the demo's job files are written, one per kind.
    public let jobsDirectory: URL

    private let cloud: DemoCloud
    private let runner: JobRunner
    private let temp: TempBox
    private let registry: JobKindRegistry

    /// Creates the root's folders, starts the cloud with dataset `seed` and writes account 0's
    /// `config.yaml` for it. A cloud that cannot start is `JobError` with exit 69.
    public init(root: DataRoot, seed: UInt64, kinds registry: JobKindRegistry = .shipped) throws {
        try root.createDirectories(accounts: [0])
        do {
            cloud = try DemoCloud(seed: seed, uploadDirectory: root.path + "/cloud-uploads")
        } catch {
            throw JobError.cloudUnavailable("\(error)")
        }
        do {
            let account = root.account(0)
            try root.directory([account.directory.lastPathComponent], create: false)
                .replaceContents(account.config.lastPathComponent, with: Array(cloud.accountConfig.utf8))
        } catch {
            cloud.stop()
            throw JobError.config("cannot write \(root.account(0).config.path): \(error)")
        }
        jobsDirectory = URL(fileURLWithPath: root.path + "/jobs")
        do {
            try FileManager.default.createDirectory(at: jobsDirectory, withIntermediateDirectories: true)
            let logger = JobLogger(sink: try LogSink(root: root, process: "demo", console: .off))
            temp = TempBox(root: root, process: "demo")
            runner = JobRunner(root: root, kinds: registry, accounts: AccountContextPool(root: root), logger: logger, temp: temp)
        } catch {
            cloud.stop()
            throw error
        }
        self.root = root
        self.registry = registry
        self.kinds = registry.kinds
    }

    /// Stops the cloud and removes the demo's temporary files.
    public func stop() {
        temp.close()
        cloud.stop()
    }

    /// How many files the cloud's dataset holds.
    public func cloudFileCount() async throws -> Int { try await cloud.fileCount() }

    /// Does the set-up `kind` asks for; a line saying what was done, or nil for none.
    public func prepare(_ kind: any JobKind) async throws -> String? {
        switch kind.demo.setup {
        case .none:
            return nil
        case .queueUploads:
            let queued = try await DemoSetup.queueUploads(account: runner.accounts.context(for: 0), scratch: try temp.directory().path)
            return "enqueued \(queued) files for upload (one of them secret)"
        case .expireReferences:
            try await cloud.resetCounters()
            try await cloud.expireReferences()
            try await DemoSetup.ageStoredReferences(account: runner.accounts.context(for: 0), by: DemoCloud.referenceTTL)
            return "the cloud expired every file reference it had issued (and the demo's clock jumps past their lifetime)"
        }
    }

    /// Writes `kind`'s demo job file into `jobsDirectory`, loads it as any job file is loaded, and
    /// runs it.
    public func run(_ kind: any JobKind) async throws -> Step {
        let demo = kind.demo
        let file = jobsDirectory.appendingPathComponent(kind.name + ".yaml")
        try demo.jobFile(kind: kind.name).write(to: file, atomically: true, encoding: .utf8)
        let job = try JobFile.load(contentsOf: file, kinds: registry)
        let result = await runner.run(job)
        guard case .expireReferences = demo.setup else { return Step(result: result, revalidation: nil) }
        let calls = try await cloud.counters().parents.values
        return Step(result: result, revalidation: (calls.count, calls.max() ?? 0))
    }
}
