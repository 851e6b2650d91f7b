import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real PostgreSQL server for tests: `initdb` into a temporary folder, `pg_ctl start` listening
/// on a Unix socket in that folder only (no TCP unless a loopback port or listen addresses are
/// asked for), stopped with `pg_ctl stop -m fast` and removed when the value is released.
///
/// `initdb` refuses to run as root, so a root test process hands the folder to the `postgres`
/// user and runs the server's tools through `runuser`. `scripts/install-deps.sh` installs
/// Debian's `postgresql` package when `initdb` is missing.
public final class PostgresServer: @unchecked Sendable {
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// The folder holding the data directory, the socket and the server log.
    public let directory: TemporaryDirectory
    /// Where the server's Unix socket lives (`<socketDirectory>/.s.PGSQL.<port>`).
    public let socketDirectory: String
    public let port: Int
    /// The superuser the tests connect as (trust authentication on the socket and loopback).
    public let user: String
    public var dataDirectory: String { directory.file("pg") }
    public var socketPath: String { (socketDirectory as NSString).appendingPathComponent(".s.PGSQL.\(port)") }
    public var logPath: String { directory.file("server.log") }
    /// Whether the server also listens on 127.0.0.1:`port`.
    public let listensOnLoopback: Bool
    /// The TCP addresses the server listens on (`listen_addresses`), empty for the socket only.
    public let listenAddresses: [String]
    private let binDirectory: String
    private let runAsUser: String?
    private var stopped = false

    /// Starts a server. `loopbackPort` (0: none) also opens 127.0.0.1 on that port.
    public convenience init(loopbackPort: Int = 0, maxConnections: Int = 200) throws {
        try self.init(
            listenAddresses: loopbackPort != 0 ? ["127.0.0.1"] : [], port: loopbackPort != 0 ? loopbackPort : 5432, maxConnections: maxConnections)
    }

    /// Starts a server listening on TCP `listenAddresses`:`port` besides its socket, trusting
    /// connections from `clientSubnets` (CIDR, e.g. the private subnet of test hosts in network
    /// namespaces) as well as from the socket and loopback, and taking at most `maxConnections`
    /// sessions at once (PostgreSQL's `max_connections`).
    public init(listenAddresses: [String], port: Int, clientSubnets: [String] = [], maxConnections: Int = 200) throws {
        guard let bin = Self.findBinaries() else {
            throw Unavailable(description: "PostgreSQL's initdb/pg_ctl were not found; run scripts/install-deps.sh")
        }
        binDirectory = bin
        directory = TemporaryDirectory(prefix: "jobrun-pg")
        listensOnLoopback = listenAddresses.contains("127.0.0.1")
        self.listenAddresses = listenAddresses
        self.port = port
        socketDirectory = directory.file("sock")
        let isRoot = getuid() == 0
        runAsUser = isRoot ? "postgres" : nil
        user = isRoot ? "postgres" : (ProcessInfo.processInfo.environment["USER"] ?? "postgres")
        try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        if isRoot {
            // The server's user must reach and own its folders.
            chmod(directory.path, 0o755)
            try run("/bin/chown", ["-R", "postgres", directory.path], asServerUser: false)
        }
        try run(
            bin + "/initdb",
            ["-D", dataDirectory, "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8", "--locale=C"])
        if !clientSubnets.isEmpty {
            let hba = dataDirectory + "/pg_hba.conf"
            let lines = clientSubnets.map { "host all all \($0) trust\n" }.joined()
            guard let handle = FileHandle(forWritingAtPath: hba) else { throw Unavailable(description: "cannot open \(hba)") }
            handle.seekToEndOfFile()
            handle.write(Data(lines.utf8))
            handle.closeFile()
        }
        let listen = listenAddresses.isEmpty ? "''" : listenAddresses.joined(separator: ",")
        // Small and fast: no fsync (the data is thrown away), short checkpoints.
        let options =
            "-k \(socketDirectory) -c listen_addresses=\(listen) -p \(port) -c fsync=off -c synchronous_commit=off"
            + " -c full_page_writes=off -c max_connections=\(maxConnections) -c shared_buffers=64MB"
        try run(bin + "/pg_ctl", ["-D", dataDirectory, "-o", options, "-l", logPath, "-w", "-t", "60", "start"])
    }

    deinit { stop() }

    /// Stops the server (`pg_ctl stop -m fast`: open sessions are ended, their transactions
    /// rolled back).
    public func stop() {
        guard !stopped else { return }
        stopped = true
        _ = try? run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "stop"])
    }

    /// Restarts the server in place (`pg_ctl restart -m fast`): every connection is dropped.
    public func restart() throws {
        try run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "-t", "60", "restart"])
    }

    /// Runs `psql -c sql` as the superuser against `database` and returns its unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        try run(
            binDirectory + "/psql", ["-h", socketDirectory, "-p", "\(port)", "-U", user, "-d", database, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
    }

    /// Creates a database and returns its name.
    public func createDatabase(_ name: String) throws -> String {
        try psql("CREATE DATABASE \"\(name)\"")
        return name
    }

    /// The server's binaries: on PATH, or Debian's versioned folder (newest first).
    private static func findBinaries() -> String? {
        let fm = FileManager.default
        if let versions = try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            for v in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
                let bin = "/usr/lib/postgresql/\(v)/bin"
                if fm.isExecutableFile(atPath: bin + "/initdb") && fm.isExecutableFile(atPath: bin + "/pg_ctl") { return bin }
            }
        }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            if fm.isExecutableFile(atPath: "\(dir)/initdb") && fm.isExecutableFile(atPath: "\(dir)/pg_ctl") { return String(dir) }
        }
        return nil
    }

    /// Runs a command to completion (`SystemCommand`), as the server's user unless told
    /// otherwise; a failure quotes its standard error and the end of the server's log.
    @discardableResult
    private func run(_ executable: String, _ arguments: [String], asServerUser: Bool = true) throws -> String {
        var argv = [executable] + arguments
        if asServerUser, let runAsUser { argv = ["/usr/sbin/runuser", "-u", runAsUser, "--"] + argv }
        let result: (status: Int32, stdout: String, stderr: String)
        do {
            result = try SystemCommand.status(argv)
        } catch {
            throw Unavailable(description: "\(error)")
        }
        guard result.status == 0 else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw Unavailable(
                description:
                    "\((executable as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed (exit \(result.status)): "
                    + result.stderr + "\n" + String(log.suffix(2000)))
        }
        return result.stdout
    }
}

extension PostgresServer {
    /// One server for the whole test process, started on first use and stopped when the
    /// process exits. Tests isolate themselves by schema or database, not by server.
    public static func shared() throws -> PostgresServer {
        try sharedServer.get()
    }

    private static let sharedServer: Result<PostgresServer, any Error> = {
        let result = Result { try PostgresServer() }
        if case .success = result { atexit { PostgresServer.stopShared() } }
        return result
    }()

    /// Its folder is removed after this, by `TemporaryDirectory`'s own exit hook.
    private static func stopShared() {
        if case let .success(server) = sharedServer { server.stop() }
    }
}
