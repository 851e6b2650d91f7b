import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// A fleet on one machine for the multi-host tests: `HostNetwork` hosts (network namespaces
/// when the kernel allows), one PostgreSQL server and one `cloudd` in the root namespace
/// listening on the bridge address, optionally a moto S3 server there for bucket staging, and
/// per host a data root whose `cluster.yaml` names them. Everything is stopped and removed by
/// `stop()`, which the test registers as a teardown block so it runs even when the test fails.
final class MultiHostCluster: @unchecked Sendable {
    // @unchecked Sendable: immutable after init apart from `children`, touched under `lock`.
    let network: HostNetwork
    let postgres: PostgresServer
    let database: String
    let cloud: ClouddProcess
    let moto: MotoServer?
    let hosts: [ClusterHost]
    let scratch: TemporaryDirectory
    private let lock = NSLock()
    private var children: [ChildProcess] = []

    static let bucket = "jobrun-fleet"

    /// Starts `count` hosts and the servers; `cloudd` gets `clouddArguments` (its address, and
    /// its upload folder when `bucket` is set, are added here), and `bucket` also starts moto
    /// and names it in every host's cluster.yaml.
    init(hosts count: Int, clouddArguments: [String], accounts: [Int64] = [0], bucket: Bool = false) throws {
        let network = try HostNetwork(hosts: count)
        let scratch = TemporaryDirectory(prefix: "jobrun-fleet")
        let postgres: PostgresServer
        let cloud: ClouddProcess
        let moto: MotoServer?
        do {
            postgres = try PostgresServer(listenAddresses: [network.serverAddress], port: try FreePort.pick(), clientSubnets: [network.subnet])
            database = try postgres.createDatabase("fleet")
            let uploads = bucket ? ["--upload-dir", scratch.file("cloudd-uploads")] : []
            cloud = try ClouddProcess(["--host", network.serverAddress] + clouddArguments + uploads)
            do {
                moto = bucket ? try MotoServer.start(logDirectory: scratch.url, host: network.serverAddress) : nil
            } catch {
                cloud.stop()
                throw error
            }
        } catch {
            network.tearDown()
            throw error
        }
        var hosts: [ClusterHost] = []
        for host in network.hosts {
            let h = ClusterHost(host: host, beside: hosts.first)
            try h.configure(postgres: postgres, database: database, cloud: cloud, accounts: accounts, moto: moto)
            hosts.append(h)
        }
        (self.network, self.scratch, self.postgres, self.cloud, self.moto, self.hosts) = (network, scratch, postgres, cloud, moto, hosts)
        if let moto {
            let created = try ChildProcess.run(
                "/usr/bin/curl", ["-sS", "--fail-with-body", "-X", "PUT", "\(moto.endpoint)/\(Self.bucket)"], timeout: 30)
            guard created.status == 0 else {
                stop()
                throw FixtureMissing("cannot create the bucket: \(created.stdout) \(created.stderr)")
            }
        }
    }

    /// Starts `jobrun args…` on `host`, stopped by `stop()` if it is still running then.
    func start(_ host: ClusterHost, _ args: [String], failpoints: String? = nil) throws -> ChildProcess {
        let child = try host.start(args, failpoints: failpoints)
        lock.lock()
        children.append(child)
        lock.unlock()
        return child
    }

    /// Runs `jobrun args…` on `host` to completion.
    func run(_ host: ClusterHost, _ args: [String], timeout: TimeInterval = 120) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try start(host, args)
        let status = child.wait(timeout: timeout)
        return (status, child.stdout, child.stderr)
    }

    /// Stops every process, then the servers, then removes the namespaces and links.
    func stop() {
        lock.lock()
        let all = children
        children = []
        lock.unlock()
        for child in all where child.isRunning { child.signal(SIGKILL) }
        for child in all { child.wait(timeout: 10) }
        cloud.stop()
        moto?.stop()
        postgres.stop()
        network.tearDown()
    }

    /// Account `id`'s Postbox in the shared store, read-only, over the server's Unix socket.
    func postbox(account id: Int64) throws -> Postbox {
        let endpoint = PostgresEndpoint(address: .unixSocket(path: postgres.socketPath), username: postgres.user, database: database)
        let schema = "jobrun_account_\(id)"
        let cipher = try hosts[0].harness.valueCipher
        return try Postbox(valueBox: PostgresValueBox(endpoint: endpoint, schema: schema, readOnly: true, cipher: cipher), name: schema, readOnly: true)
    }

    /// The run records of `job` in account `id` (empty until the account's store exists).
    func runs(job: String, account id: Int64) -> [JobRunRecord] {
        guard let postbox = try? postbox(account: id) else { return [] }
        return (try? postbox.readSync { try $0.jobRuns.recent(job: job, limit: 100) }) ?? []
    }

    /// Account `id`'s upload queue as last committed.
    func uploadItems(account id: Int64 = 0) throws -> [UploadItem] {
        try postbox(account: id).readSync { tx in
            var out: [UploadItem] = []
            try tx.uploadQueue.scan {
                out.append($0)
                return true
            }
            return out
        }
    }

    /// Sessions holding a cluster run lock (advisory locks of `PostgresClusterRunLockSession.lockClass`).
    func heldRunLocks() throws -> Int {
        Int(try postgres.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(0x524C_0001) AND granted", database: database))
            ?? -1
    }
}

/// One host of a `MultiHostCluster`: its own data root and jobs folder, and where its processes
/// run (`HostNetwork.Host`). Every host after the first holds the first one's key.
final class ClusterHost: @unchecked Sendable {
    let host: HostNetwork.Host
    let harness: JobrunHarness
    var root: String { harness.root }

    init(host: HostNetwork.Host, beside first: ClusterHost?) {
        self.host = host
        self.harness = first.map { JobrunHarness(sharingKeyOf: $0.harness) } ?? JobrunHarness()
    }

    /// Writes `cluster.yaml` (the shared PostgreSQL over TCP on the bridge address, and the
    /// bucket when there is one) and each account's `config.yaml` naming `cloud`.
    func configure(postgres: PostgresServer, database: String, cloud: ClouddProcess, accounts: [Int64], moto: MotoServer?) throws {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let address = postgres.listenAddresses.first ?? "127.0.0.1"
        var cluster = "postgres:\n  url: postgresql://\(postgres.user)@\(address):\(postgres.port)/\(database)\n"
        if let moto {
            try writePrivate(
                root + "/s3-credentials",
                "[default]\naws_access_key_id = \(moto.credentials.accessKeyId)\naws_secret_access_key = \(moto.credentials.secretAccessKey)\n")
            cluster += "objectStorage:\n  endpoint: \(moto.endpoint)\n  bucket: \(MultiHostCluster.bucket)\n  credentialsFile: s3-credentials\n"
        }
        try writePrivate(root + "/cluster.yaml", cluster)
        for id in accounts {
            let dir = root + "/account-\(id)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try writePrivate(dir + "/config.yaml", cloud.accountConfig())
        }
    }

    func writeJob(_ name: String, _ yaml: String) throws { try harness.writeJob(name, yaml) }

    /// Starts `jobrun args…` on this host (inside its namespace when it has one).
    func start(_ args: [String], failpoints: String? = nil) throws -> ChildProcess {
        var env: [String: String] = [:]
        if let failpoints { env["JOBRUN_FAILPOINTS"] = failpoints }
        let command = host.command(harness.binary, harness.arguments(args))
        return try ChildProcess(command.executable, command.arguments, environment: env)
    }

    private func writePrivate(_ path: String, _ text: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
    }
}

extension XCTestCase {
    /// A `MultiHostCluster` stopped when the test ends, pass or fail.
    func startCluster(hosts: Int, clouddArguments: [String], accounts: [Int64] = [0], bucket: Bool = false) throws -> MultiHostCluster {
        let cluster = try MultiHostCluster(hosts: hosts, clouddArguments: clouddArguments, accounts: accounts, bucket: bucket)
        addTeardownBlock { cluster.stop() }
        if let reason = cluster.network.fallbackReason { print("MultiHostCluster: \(reason)") }
        return cluster
    }

    /// Polls `condition` every 0.25 s for up to `seconds`; whether it came true.
    func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return condition()
    }
}
