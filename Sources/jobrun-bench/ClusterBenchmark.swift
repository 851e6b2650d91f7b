import ArgumentParser
import CloudProtocol
import Foundation
import Jobs
import Postbox
import PostboxPostgres
import ServerFixtures

/// `jobrun-bench cluster`: the fleet's throughput with 1, 2 and 3 hosts sharing one PostgreSQL
/// and one `cloudd` — hosts in network namespaces when this process may create them, plain
/// processes otherwise. Two workloads per host count: single-account `sync-history` jobs over
/// distinct accounts split evenly between the hosts (jobs per minute), and one account's
/// `revalidate-references` run by every host at once over the same due parents (parents per
/// second; each round has an account of its own, synced before the rounds, whose references
/// fall due a minute later and do not fall due again during the run). `cloudd` answers every
/// request after `--latency-ms` (50 ms), so a host spends its time waiting on the cloud, as over
/// a real network, and the figures show the coordination rather than the machine's cores. Each
/// figure is set against the 1-host figure of the same invocation, and the CPU used by
/// PostgreSQL, cloudd and the hosts' processes during each run says what saturated.
///
/// Then two figures of the work queue itself: how soon a `jobrun schedule` host with nothing to
/// do claims an item another host added (pickup), and how many work items of empty jobs over
/// many accounts the hosts claim and finish per second (one worker per job per host, as
/// `jobrun schedule` has: `queue-drain`).
struct ClusterBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Cluster throughput with 1…3 hosts on one PostgreSQL and one cloudd: jobs per minute and revalidated parents per second.")
    @Option(help: "Largest number of hosts (runs 1, 2, … up to it).") var hosts = 3
    @Option(help: "Single-account sync jobs per host count.") var jobs = 6
    @Option(help: "Peers in cloudd's dataset (each synced account lists them all).") var peers = 20
    @Option(help: "Messages per peer: a revalidated account's parents are peers × this.") var messagesPerPeer = 100
    @Option(help: "Messages each sync job stores per peer.") var syncMessages = 40
    @Option(help: "Messages per history page of a sync job (one request each, one peer at a time).") var syncPageSize = 5
    @Option(help: "Added latency of every cloudd request, ms.") var latencyMs = 50
    @Option(help: "Messages per revalidation call.") var revalidationBatch = 4
    @Option(help: "Revalidation calls in flight per host.") var revalidationConcurrency = 1
    @Option(help: "Items added one at a time for the pickup figure.") var pickups = 10
    @Option(help: "Accounts of the many-accounts figure.") var accounts = 1000
    @Option(help: "Empty jobs over those accounts (one worker each per host).") var queueJobs = 4
    @Option(help: "Fires of each empty job (items = accounts × jobs × fires).") var fires = 3
    @Option(help: "Which figures, comma-separated: scaling, pickup, accounts.") var figures = "scaling,pickup,accounts"
    @Flag(help: "A small run (6 jobs, 10 × 20 parents, 200 accounts) for a smoke test.") var quick = false
    @Option(help: "A cloudd executable (default: the one next to this binary).") var cloudd: String?
    @Option(help: "A jobrun executable (default: the one next to this binary).") var jobrun: String?
    @Option(help: "Scratch directory (removed afterwards).") var workDir = NSTemporaryDirectory() + "jobrun-bench-cluster"

    func run() throws {
        let benchmark = ClusterBenchmark(
            maxHosts: max(1, hosts), jobs: quick ? 6 : jobs, peers: quick ? 10 : peers, messagesPerPeer: quick ? 20 : messagesPerPeer,
            syncMessages: quick ? 10 : syncMessages, syncPageSize: syncPageSize, latencyMs: latencyMs, revalidationBatch: revalidationBatch,
            revalidationConcurrency: revalidationConcurrency, pickups: quick ? 4 : pickups, accounts: quick ? 200 : accounts, queueJobs: queueJobs,
            fires: quick ? 1 : fires, figures: Set(figures.split(separator: ",").map(String.init)), clouddPath: cloudd ?? siblingExecutable("cloudd"),
            jobrunPath: jobrun ?? siblingExecutable("jobrun"),
            workDir: workDir)
        defer { try? FileManager.default.removeItem(atPath: workDir) }
        try benchmark.run()
    }
}

struct ClusterBenchmark {
    var maxHosts: Int
    var jobs: Int
    var peers: Int
    var messagesPerPeer: Int
    var syncMessages: Int
    var syncPageSize: Int
    var latencyMs: Int
    var revalidationBatch: Int
    var revalidationConcurrency: Int
    var pickups: Int
    var accounts: Int
    var queueJobs: Int
    var fires: Int
    var figures: Set<String>
    var clouddPath: String
    var jobrunPath: String
    var workDir: String

    /// One host count's figures.
    struct Round {
        var hosts: Int
        var jobs: Int
        var jobsSeconds: Double
        var jobsLoad: CPULoad
        var parents: Int
        var parentsAskedTwice: Int
        var revalidationSeconds: Double
        var revalidationLoad: CPULoad
        /// The revalidated store's writer lock during the revalidation.
        var revalidationLock: WriterLockLoad
        /// The same run again right after, with nothing due: what every host's run costs
        /// whatever its share (the process, the store's opening, the selection).
        var idleRevalidationSeconds: Double
        /// Each host's run, step by step (hosts whose run printed no breakdown are missing).
        var breakdown: [RevalidationBreakdown]
        var jobsPerMinute: Double { Double(jobs) / jobsSeconds * 60 }
        var parentsPerSecond: Double { Double(parents) / revalidationSeconds }
    }

    func run() throws {
        for path in [clouddPath, jobrunPath] where !FileManager.default.isExecutableFile(atPath: path) {
            throw BenchError("no executable at \(path) (swift build, or pass --cloudd / --jobrun)")
        }
        try? FileManager.default.removeItem(atPath: workDir)
        try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let network = try HostNetwork(hosts: maxHosts)
        defer { network.tearDown() }
        let postgres = try PostgresServer(listenAddresses: [network.serverAddress], port: try FreePort.pick(), clientSubnets: [network.subnet])
        defer { postgres.stop() }
        let database = try postgres.createDatabase("bench_cluster")
        let (cloud, dcs) = try launchCloudd(
            clouddPath,
            [
                "--host", network.serverAddress, "--port-base", "0", "--seed", "7", "--dcs", "2", "--peers", "\(peers)",
                "--messages-per-peer", "\(messagesPerPeer)", "--cdn-fraction", "0", "--latency-ms", "\(latencyMs)",
            ])
        defer {
            cloud.terminate()
            cloud.waitUntilExit()
        }
        let admin = ClouddAdmin(base: dcs[0])
        let hosts = try network.hosts.map { host in
            try BenchHost(
                host: host, directory: workDir + "/\(host.name)", jobrun: jobrunPath,
                postgresURL: "postgresql://\(postgres.user)@\(network.serverAddress):\(postgres.port)/\(database)", dcs: dcs, rounds: maxHosts,
                jobAccounts: Array(1...Int64(jobs * maxHosts)), syncMessages: syncMessages, syncPageSize: syncPageSize, parentMessages: messagesPerPeer,
                revalidationBatch: revalidationBatch, revalidationConcurrency: revalidationConcurrency)
        }
        let postmaster = try postmasterPid(postgres)
        print(
            "cluster: \(maxHosts) host(s) \(network.isolated ? "in network namespaces" : "as plain processes (\(network.fallbackReason ?? ""))"); PostgreSQL and cloudd (\(latencyMs) ms per request) on \(network.serverAddress); \(ProcessInfo.processInfo.activeProcessorCount) CPU cores; \(Self.buildKind(jobrunPath)) build; load average at start \(Self.loadAverage())"
        )

        // The revalidated accounts, one per round: every message of every peer, synced before
        // the rounds; their references fall due `BenchHost.dueAfter` after the sync.
        var synced: [Date] = []
        for count in 1...maxHosts where figures.contains("scaling") {
            try hosts[0].run("sync-\(BenchHost.revalidatedAccount(count))")
            synced.append(Date())
        }
        var rounds: [Round] = []
        for count in 1...maxHosts where figures.contains("scaling") {
            let active = Array(hosts.prefix(count))
            // Jobs: distinct accounts per round (a fresh sync each), split evenly between hosts.
            let accounts = (0..<jobs).map { Int64(1 + (count - 1) * jobs + $0) }
            let jobsLoad = CPULoad.Sampler(postmaster: postmaster, cloudd: cloud.processIdentifier)
            let jobsSeconds = try measure {
                try inParallel(active) { host in
                    for (i, id) in accounts.enumerated() where i % count == host.index { try host.run("sync-\(id)") }
                }
            }
            let jobsCPU = jobsLoad.finish(seconds: jobsSeconds)
            // Revalidation: this round's account, due by now, by every host at once.
            let due = synced[count - 1].addingTimeInterval(BenchHost.dueAfter + 1).timeIntervalSinceNow
            if due > 0 { Thread.sleep(forTimeInterval: due) }
            try admin.expireReferences()
            try admin.resetCounters()
            let revalidationLoad = CPULoad.Sampler(postmaster: postmaster, cloudd: cloud.processIdentifier)
            let lock = try WriterLockLoad.Sampler(
                endpoint: PostgresEndpoint(address: .unixSocket(path: postgres.socketPath), username: postgres.user, database: database))
            let breakdowns = ThreadResults<RevalidationBreakdown>()
            let revalidationSeconds = try measure {
                try inParallel(active) { host in
                    var json = ""
                    let wall = try measure { json = try host.run("revalidate-\(count)", json: true) }
                    if let b = RevalidationBreakdown(host: host.host.name, wallSeconds: wall, json: json) { breakdowns.add(b) }
                }
            }
            let revalidationLock = lock.finish()
            let counters = try admin.counters()
            let idleRevalidationSeconds = try measure { try active[0].run("revalidate-\(count)") }
            let round = Round(
                hosts: count, jobs: jobs, jobsSeconds: jobsSeconds, jobsLoad: jobsCPU, parents: counters.parents.count,
                parentsAskedTwice: counters.parents.values.filter { $0 > 1 }.count, revalidationSeconds: revalidationSeconds,
                revalidationLoad: revalidationLoad.finish(seconds: revalidationSeconds), revalidationLock: revalidationLock,
                idleRevalidationSeconds: idleRevalidationSeconds, breakdown: breakdowns.all.sorted { $0.host < $1.host })
            rounds.append(round)
        }
        report(rounds)

        let cluster = PostgresClusterConfig(address: .tcp(host: network.serverAddress, port: postgres.port), username: postgres.user, database: database)
        if figures.contains("pickup") {
            let pickup = try measurePickup(hosts: hosts, cluster: cluster, postgres: postgres, database: database)
            print(
                "pickup of a new item by an idle `jobrun schedule` host (LISTEN/NOTIFY): median \(fmt(pickup.median, 3)) s, longest \(fmt(pickup.longest, 3)) s over \(pickup.count) items (target ≤ 1 s)"
            )
        }
        guard figures.contains("accounts") else { return }
        let drain = try measureManyAccounts(network: network, cluster: cluster, postgres: postgres, database: database, postmaster: postmaster)
        print(
            "many accounts: \(drain.items) work items (\(accounts) accounts × \(queueJobs) empty jobs × \(fires) fires) claimed and finished by \(maxHosts) hosts (one worker per job each) in \(fmt(drain.seconds, 2)) s: \(fmt(Double(drain.items) / drain.seconds, 0)) items/s (target ≥ 1,000; graphile-worker ≈ 15,600 jobs/s published)"
        )
        print("saturated (many accounts): \(drain.load.verdict)")
        print("load average at the end: \(Self.loadAverage())")
        BenchRatios.record(
            "cluster", "work items claimed and finished per second, \(accounts) accounts, \(maxHosts) hosts",
            product: fmt(Double(drain.items) / drain.seconds, 0) + " items/s", peer: "1,000 items/s (target)",
            ratio: Double(drain.items) / drain.seconds / 1000, target: 1)
    }

    /// Adds `pickups` items one at a time, each for an account of its own, while every host runs
    /// `jobrun schedule` with nothing to do; returns how long each waited to be claimed (the
    /// server's clock: claimed_at − created_at).
    private func measurePickup(hosts: [BenchHost], cluster: PostgresClusterConfig, postgres: PostgresServer, database: String) throws -> (
        median: Double, longest: Double, count: Int
    ) {
        let schedulers = try hosts.map { try $0.startScheduler() }
        defer {
            for s in schedulers where s.isRunning { kill(s.processIdentifier, SIGTERM) }
            for s in schedulers { s.waitUntilExit() }
        }
        // Every scheduler has started (and listens) once its first poll has found nothing.
        Thread.sleep(forTimeInterval: 5)
        let queue = try cluster.workQueue(holder: .init(host: "bench", pid: getpid()))
        var waits: [Double] = []
        for i in 0..<pickups {
            let account = BenchHost.pickupAccounts[i % BenchHost.pickupAccounts.count]
            let fire = Date()
            _ = try awaitBlocking { try await queue.enqueue(job: BenchHost.pickupJob, accounts: [account], fire: fire) }
            let deadline = Date().addingTimeInterval(30)
            var wait: Double?
            while wait == nil, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.05)
                let text = try postgres.psql(
                    "SELECT extract(epoch FROM claimed_at - created_at) FROM \"\(cluster.schemaPrefix)_cluster\".work_items WHERE job = '\(BenchHost.pickupJob)' AND account = \(account) AND fire_ms = \(ClusterWorkItem.milliseconds(fire)) AND claimed_at IS NOT NULL",
                    database: database)
                wait = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard let wait else { throw BenchError("no host claimed the pickup item of account \(account) within 30 s") }
            waits.append(wait)
            // The next item comes when this one's run has ended on some host.
            Thread.sleep(forTimeInterval: 1.5)
        }
        let sorted = waits.sorted()
        return (sorted[sorted.count / 2], sorted.last ?? 0, sorted.count)
    }

    /// Adds `accounts × queueJobs × fires` items of empty jobs, then runs `queue-drain` on every
    /// host at once; the rate counts from the first claim to the last finish (the server's clock).
    private func measureManyAccounts(
        network: HostNetwork, cluster: PostgresClusterConfig, postgres: PostgresServer, database: String, postmaster: Int32
    ) throws -> (items: Int, seconds: Double, load: CPULoad) {
        let queue = try cluster.workQueue(holder: .init(host: "bench", pid: getpid()))
        let jobs = (1...queueJobs).map { "empty-\($0)" }
        let ids = (1...Int64(accounts)).map { 100_000 + $0 }
        let base = Date()
        for fire in 0..<fires {
            for job in jobs {
                _ = try awaitBlocking { try await queue.enqueue(job: job, accounts: ids, fire: base.addingTimeInterval(Double(fire))) }
            }
        }
        let load = CPULoad.Sampler(postmaster: postmaster, cloudd: 0)
        let seconds = try measure {
            let drains = try network.hosts.map { host in
                let command = host.command(
                    thisExecutable.path,
                    [
                        "queue-drain", "--host", network.serverAddress, "--port", "\(postgres.port)", "--user", postgres.user, "--database", database,
                        "--name", host.name, "--jobs", jobs.joined(separator: ","),
                    ])
                let p = Process()
                p.executableURL = URL(fileURLWithPath: command.executable)
                p.arguments = command.arguments
                p.standardOutput = FileHandle.nullDevice
                try p.run()
                return p
            }
            for p in drains { p.waitUntilExit() }
            if let failed = drains.first(where: { $0.terminationStatus != 0 }) {
                throw BenchError("queue-drain exited \(failed.terminationStatus)")
            }
        }
        let used = load.finish(seconds: seconds)
        let text = try postgres.psql(
            "SELECT count(*) || ' ' || extract(epoch FROM max(finished_at) - min(claimed_at)) FROM \"\(cluster.schemaPrefix)_cluster\".work_items WHERE job LIKE 'empty-%' AND state = 'done'",
            database: database)
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        guard parts.count == 2, let items = Int(parts[0]), let span = Double(parts[1]), span > 0 else {
            throw BenchError("no finished items: \(text)")
        }
        guard items == ids.count * jobs.count * fires else { throw BenchError("\(items) of \(ids.count * jobs.count * fires) items finished") }
        return (items, span, used)
    }

    static func buildKind(_ path: String) -> String {
        path.contains("/release/") ? "release" : path.contains("/debug/") ? "debug" : "unknown"
    }

    /// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    private func report(_ rounds: [Round]) {
        guard let one = rounds.first else { return }
        var table = BenchTable(
            title:
                "Cluster throughput, cloud latency \(latencyMs) ms: \(jobs) single-account sync jobs per round (\(peers) peers × \(syncMessages / max(1, syncPageSize)) pages, one request at a time); one account's \(one.parents) parents revalidated by every host at once (\(revalidationBatch) per call, \(revalidationConcurrency) calls in flight per host)",
            columns: [
                "hosts", "jobs/min", "× 1 host", "parents/s", "× 1 host", "asked twice", "CPU jobs: pg/cloudd/hosts/machine",
                "CPU reval: pg/cloudd/hosts/machine",
            ])
        for r in rounds {
            table.add([
                "\(r.hosts)", fmt(r.jobsPerMinute, 1), fmt(r.jobsPerMinute / one.jobsPerMinute), fmt(r.parentsPerSecond, 0),
                fmt(r.parentsPerSecond / one.parentsPerSecond), "\(r.parentsAskedTwice)", r.jobsLoad.summary, r.revalidationLoad.summary,
            ])
        }
        table.print()
        if let last = rounds.last, rounds.count > 1 {
            // Near-linear in hosts: 90% (jobs) and 83% (revalidation) of one host's figure per
            // host: 2.7× and 2.5× at 3 hosts.
            let jobsTarget = 0.9 * Double(last.hosts)
            let revalidationTarget = Double(last.hosts) * 2.5 / 3
            BenchRatios.record(
                "cluster", "jobs per minute, \(last.hosts) hosts vs 1", product: fmt(last.jobsPerMinute, 1) + " jobs/min",
                peer: fmt(one.jobsPerMinute, 1) + " jobs/min (1 host)", ratio: last.jobsPerMinute / one.jobsPerMinute, target: jobsTarget)
            BenchRatios.record(
                "cluster", "revalidated parents per second, \(last.hosts) hosts vs 1", product: fmt(last.parentsPerSecond, 0) + " parents/s",
                peer: fmt(one.parentsPerSecond, 0) + " parents/s (1 host)", ratio: last.parentsPerSecond / one.parentsPerSecond, target: revalidationTarget)
            print("saturated (jobs, \(last.hosts) hosts): \(last.jobsLoad.verdict)")
            print("saturated (revalidation, \(last.hosts) hosts): \(last.revalidationLoad.verdict)")
        }
        for r in rounds {
            print(
                "revalidation, \(r.hosts) host(s): \(fmt(r.revalidationSeconds)) s; the same run with nothing due \(fmt(r.idleRevalidationSeconds)) s; store writer lock \(r.revalidationLock.summary)"
            )
            // Each step summed over the host's units (they overlap: see `RevalidationBreakdown`).
            for line in RevalidationBreakdown.lines(r.breakdown) { print(line) }
        }
    }

    /// Runs `body` for each host on a thread of its own and waits for all; the first error wins.
    /// Threads, not `concurrentPerform`: that runs at most as many iterations at once as there
    /// are cores, so on two cores a third host would wait for one of the others to finish.
    private func inParallel(_ hosts: [BenchHost], _ body: @escaping @Sendable (BenchHost) throws -> Void) throws {
        let failures = ThreadResults<String>()
        let finished = DispatchGroup()
        for host in hosts {
            finished.enter()
            Thread.detachNewThread {
                do { try body(host) } catch { failures.add("\(error)") }
                finished.leave()
            }
        }
        finished.wait()
        if let first = failures.first { throw BenchError(first) }
    }

    private func postmasterPid(_ postgres: PostgresServer) throws -> Int32 {
        let text = try String(contentsOfFile: postgres.dataDirectory + "/postmaster.pid", encoding: .utf8)
        guard let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }) else { throw BenchError("no pid in postmaster.pid") }
        return pid
    }
}

/// One bench host: a data root whose `cluster.yaml` names the shared server, account configs
/// naming cloudd, and the job files; `run` runs a job there with `jobrun run`.
final class BenchHost: Sendable {
    /// The revalidated accounts' reference lifetime, and the window of their revalidation (the
    /// longest the lifetime allows: all of it but half, for a lifetime under two minutes). A reference falls due `dueAfter`
    /// seconds after it was obtained, so a round's run, shorter than that, asks each parent once.
    static let referenceTTL = 90
    static let window = 45
    static var dueAfter: Double { Double(referenceTTL - window) }

    /// The job whose items the pickup figure adds (it never fires by itself), and its accounts.
    static let pickupJob = "pickup"
    static let pickupAccounts: [Int64] = Array(5001...5010)

    /// The account whose parents the round with `hosts` hosts revalidates.
    static func revalidatedAccount(_ hosts: Int) -> Int64 { Int64(1000 + hosts) }

    let host: HostNetwork.Host
    let root: String
    let jobsDir: String
    let jobrun: String
    var index: Int { host.index }

    init(
        host: HostNetwork.Host, directory: String, jobrun: String, postgresURL: String, dcs: [String], rounds: Int, jobAccounts: [Int64],
        syncMessages: Int, syncPageSize: Int, parentMessages: Int, revalidationBatch: Int, revalidationConcurrency: Int
    ) throws {
        self.host = host
        self.jobrun = jobrun
        root = directory + "/root"
        jobsDir = directory + "/jobs"
        let fm = FileManager.default
        try fm.createDirectory(atPath: jobsDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try fm.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Self.write(root + "/cluster.yaml", "postgres:\n  url: \(postgresURL)\n")
        var cloud = "datacenters:\n"
        for (i, url) in dcs.enumerated() { cloud += "  \(i + 1): \(url)\n" }
        cloud += "mainDc: 1\nrequestTimeout: 30s\nconnectTimeout: 5s\n"
        let revalidated = (1...rounds).map(Self.revalidatedAccount)
        for id in revalidated + jobAccounts {
            let dir = root + "/account-\(id)"
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Self.write(dir + "/config.yaml", revalidated.contains(id) ? cloud + "referenceTTL: \(Self.referenceTTL)s\n" : cloud)
            try Self.write(
                jobsDir + "/sync-\(id).yaml",
                """
                name: sync-\(id)
                kind: sync-history
                timeout: 10m
                accounts: [\(id)]
                retry:
                  backoffLimit: 0
                params:
                  initialMessages: \(revalidated.contains(id) ? parentMessages : syncMessages)
                  requestRate: 1000
                \(revalidated.contains(id) ? "" : "  pageSize: \(syncPageSize)\n  concurrency: 1")
                """)
        }
        for (round, id) in revalidated.enumerated() {
            try Self.write(
                jobsDir + "/revalidate-\(round + 1).yaml",
                """
                name: revalidate-\(round + 1)
                kind: revalidate-references
                timeout: 10m
                concurrencyPolicy: Allow
                accounts: [\(id)]
                retry:
                  backoffLimit: 0
                params:
                  window: \(Self.window)s
                  batchSize: \(revalidationBatch)
                  requestRate: 1000
                  concurrency: \(revalidationConcurrency)
                  maxParents: 10000000
                """)
        }
        try Self.write(
            jobsDir + "/\(Self.pickupJob).yaml",
            """
            name: \(Self.pickupJob)
            kind: time-based-cleanup
            schedule: "0 0 1 1 *"
            accounts: [\(Self.pickupAccounts.map(String.init).joined(separator: ", "))]
            params:
              maxSize: 1GiB
            """)
    }

    /// `jobrun run <job>` on this host (with `--json`, its result); a non-zero exit is an error
    /// quoting its stderr. Returns its standard output.
    @discardableResult
    func run(_ job: String, json: Bool = false) throws -> String {
        let command = host.command(jobrun, ["run", job, "--root", root, "--jobs-dir", jobsDir] + (json ? ["--json"] : []))
        let result = try SystemCommand.status([command.executable] + command.arguments)
        guard result.status == 0 else { throw BenchError("\(host.name): jobrun run \(job) exited \(result.status): \(result.stderr.suffix(2000))") }
        return result.stdout
    }

    /// `jobrun schedule` on this host (stopped by SIGTERM), its output discarded.
    func startScheduler() throws -> Process {
        let command = host.command(jobrun, ["schedule", "--root", root, "--jobs-dir", jobsDir])
        let p = Process()
        p.executableURL = URL(fileURLWithPath: command.executable)
        p.arguments = command.arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    private static func write(_ path: String, _ text: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
    }
}

/// cloudd's admin routes, through the `curl` command.
struct ClouddAdmin {
    var base: String

    func expireReferences() throws { try post("references/expire", try JSONEncoder().encode(ExpireReferencesRequest())) }
    func resetCounters() throws { try post("counters/reset", Data("{}".utf8)) }

    func counters() throws -> CountersResponse {
        let text = try SystemCommand.run(["/usr/bin/curl", "-sS", "--fail-with-body", base + "/admin/counters"])
        return try JSONDecoder().decode(CountersResponse.self, from: Data(text.utf8))
    }

    private func post(_ path: String, _ body: Data) throws {
        try SystemCommand.run([
            "/usr/bin/curl", "-sS", "--fail-with-body", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
            String(decoding: body, as: UTF8.self), base + "/admin/" + path,
        ])
    }
}

/// CPU used during a run, in cores (CPU seconds ÷ wall seconds), by PostgreSQL (the postmaster,
/// its live backends and the backends it reaped), cloudd, this benchmark's children (the hosts'
/// jobrun processes), and the whole machine (`/proc/stat`, so other users' load shows too).
struct CPULoad {
    var postgres: Double
    var cloudd: Double
    var hosts: Double
    var machine: Double
    let cores = Double(ProcessInfo.processInfo.activeProcessorCount)

    var summary: String { "\(fmt(postgres))/\(fmt(cloudd))/\(fmt(hosts))/\(fmt(machine))" }

    /// Which resource ran out: the machine's cores when the three together use nearly all of
    /// them, else PostgreSQL or cloudd when one of them keeps a core busy, else none of these
    /// (waiting on round trips).
    var verdict: String {
        let shares =
            "PostgreSQL \(fmt(postgres)) + cloudd \(fmt(cloudd)) + jobrun processes \(fmt(hosts)) cores, the machine \(fmt(machine)) of \(Int(cores))"
        if machine >= 0.85 * cores {
            let top = [("PostgreSQL", postgres), ("cloudd", cloudd), ("the hosts' jobrun processes", hosts)].max { $0.1 < $1.1 }!
            return "the machine's CPU cores (\(shares)); of this benchmark's processes \(top.0) used the most"
        }
        if postgres >= 0.8 { return "PostgreSQL (\(shares))" }
        if cloudd >= 0.8 { return "cloudd (\(shares))" }
        return "neither PostgreSQL nor cloudd: \(shares); the runs wait on round trips"
    }

    /// CPU seconds of the processes above, sampled at creation and at `finish`.
    struct Sampler {
        let postmaster: Int32
        let cloudd: Int32
        let start: (postgres: Double, cloudd: Double, hosts: Double, machine: Double)

        init(postmaster: Int32, cloudd: Int32) {
            self.postmaster = postmaster
            self.cloudd = cloudd
            start = Self.sample(postmaster: postmaster, cloudd: cloudd)
        }

        func finish(seconds: Double) -> CPULoad {
            let end = Self.sample(postmaster: postmaster, cloudd: cloudd)
            return CPULoad(
                postgres: (end.postgres - start.postgres) / seconds, cloudd: (end.cloudd - start.cloudd) / seconds,
                hosts: (end.hosts - start.hosts) / seconds, machine: (end.machine - start.machine) / seconds)
        }

        static func sample(postmaster: Int32, cloudd: Int32) -> (postgres: Double, cloudd: Double, hosts: Double, machine: Double) {
            var postgres = ProcStat(pid: postmaster).map { $0.own + $0.reapedChildren } ?? 0
            for child in ProcStat.children(of: postmaster) { postgres += child.own }
            return (postgres, ProcStat(pid: cloudd)?.own ?? 0, rusageCPUSeconds(RUSAGE_CHILDREN), machineBusySeconds())
        }

        /// Busy CPU seconds of all cores since boot: `/proc/stat`'s first line minus idle and iowait.
        static func machineBusySeconds() -> Double {
            guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8), let line = text.split(separator: "\n").first else { return 0 }
            let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
            guard ticks.count >= 5 else { return 0 }
            // user nice system idle iowait irq softirq steal (guest time is inside user already).
            let busy = ticks.prefix(8).enumerated().filter { $0.offset != 3 && $0.offset != 4 }.map(\.element).reduce(0, +)
            return busy / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
}

/// How busy the stores' writer locks were during a run, sampled from `pg_locks` every 20 ms on
/// a connection of its own: the share of samples in which a writer held one, in which a writer
/// waited for one, and the mean number waiting. A lock held nearly all the time with writers
/// waiting is what serialises the hosts; a lock mostly free is not.
struct WriterLockLoad {
    var samples: Int
    var held: Int
    var waited: Int
    var waiters: Int

    var summary: String {
        guard samples > 0 else { return "not sampled" }
        let n = Double(samples)
        return
            "held in \(fmt(Double(held) / n * 100, 0))% of \(samples) samples, a writer waiting in \(fmt(Double(waited) / n * 100, 0))%, \(fmt(Double(waiters) / n)) waiting on average"
    }

    /// Samples on a thread of its own from creation until `finish`.
    final class Sampler: @unchecked Sendable {
        // @unchecked Sendable: `load` and `stopped` are only touched under `lock`; the session
        // only on the sampling thread.
        private let lock = NSLock()
        private var load = WriterLockLoad(samples: 0, held: 0, waited: 0, waiters: 0)
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)
        private let session: PostgresSession

        init(endpoint: PostgresEndpoint) throws {
            session = try PostgresSession(endpoint: endpoint, name: "bench:locks")
            // The two-key advisory locks of `PostgresValueBox.storeLockClass` (classid = the
            // class, objsubid 2 = the two-key form).
            let sql =
                "SELECT count(*) FILTER (WHERE granted), count(*) FILTER (WHERE NOT granted) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND classid = \(UInt32(bitPattern: PostgresValueBox.storeLockClass))"
            Thread.detachNewThread { [self] in
                defer {
                    session.close()
                    done.signal()
                }
                while !isStopped {
                    guard let row = try? session.query(sql).first else { return }
                    let cells = Array(row)
                    let held = (try? cells[0].decode(Int64.self)) ?? 0
                    let waiting = (try? cells[1].decode(Int64.self)) ?? 0
                    record(held: held > 0, waiting: Int(waiting))
                    Thread.sleep(forTimeInterval: 0.02)
                }
            }
        }

        private var isStopped: Bool {
            lock.lock()
            defer { lock.unlock() }
            return stopped
        }

        private func record(held: Bool, waiting: Int) {
            lock.lock()
            load.samples += 1
            if held { load.held += 1 }
            if waiting > 0 { load.waited += 1 }
            load.waiters += waiting
            lock.unlock()
        }

        func finish() -> WriterLockLoad {
            lock.lock()
            stopped = true
            lock.unlock()
            done.wait()
            lock.lock()
            defer { lock.unlock() }
            return load
        }
    }
}

/// What worker threads hand back (their errors, their results), in the order they came.
private final class ThreadResults<Element>: @unchecked Sendable {
    // @unchecked Sendable: `elements` is only touched under `lock`.
    private let lock = NSLock()
    private var elements: [Element] = []
    func add(_ element: Element) {
        lock.lock()
        elements.append(element)
        lock.unlock()
    }
    var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return elements
    }
    var first: Element? { all.first }
}
