import Foundation
import ServerFixtures
import XCTest

/// A real S3-compatible server for tests: moto's standalone server (`moto_server`, from
/// `pip install 'moto[server]'`, which `scripts/install-deps.sh` installs) on a free 127.0.0.1
/// port, started by the test and stopped (SIGKILL) afterwards.
///
/// With `authenticated: true` the server checks SigV4 signatures like S3 does: the first three
/// requests, made here without credentials, create an IAM user with an allow-all policy and an
/// access key, which ``credentials`` then holds; any other key or a wrong secret is refused.
/// Without it, any key pair is accepted (signatures are not checked).
public final class MotoServer: @unchecked Sendable {
    // @unchecked Sendable: immutable except `process`, which only `stop()` touches, under `lock`.
    public let port: Int
    /// The address it listens on (127.0.0.1 unless asked otherwise).
    public let host: String
    /// Access key id and secret that the server accepts.
    public let credentials: (accessKeyId: String, secretAccessKey: String)
    public let authenticated: Bool
    private let lock = NSLock()
    private var process: Process?
    private let logURL: URL

    /// `http://HOST:PORT`.
    public var endpoint: String { "http://\(host):\(port)" }

    /// The moto server command, if `moto_server` is on PATH.
    public static func command() -> [String]? {
        SystemCommand.onPath("moto_server").map { [$0] }
    }

    /// Starts a server; `logDirectory` keeps its output for diagnostics. `host` is the address
    /// it listens on: loopback, or e.g. the bridge address that test hosts in network namespaces
    /// reach (`HostNetwork.serverAddress`).
    public static func start(logDirectory: URL, authenticated: Bool = false, host: String = "127.0.0.1") throws -> MotoServer {
        guard let command = command() else {
            throw FixtureMissing("moto_server is not on PATH: run scripts/install-deps.sh (pip install 'moto[server]')")
        }
        var lastLog = ""
        for _ in 0..<5 {
            let port = try FreePort.pick()
            let log = logDirectory.appendingPathComponent("moto-\(port).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst()) + ["-H", host, "-p", String(port)]
            var env = ProcessInfo.processInfo.environment
            for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"] { env[name] = nil }
            if authenticated { env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3" }
            process.environment = env
            let handle = try FileHandle(forWritingTo: log)
            process.standardOutput = handle
            process.standardError = handle
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            var up = false
            while Date() < deadline && process.isRunning {
                if NginxServer.canConnect(port: port, host: host) {
                    up = true
                    break
                }
                usleep(50_000)
            }
            lastLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if up {
                let credentials =
                    authenticated ? try createAccessKey(host: host, port: port) : (accessKeyId: "AKIDMOTOTEST", secretAccessKey: "moto-test-secret")
                return MotoServer(port: port, host: host, credentials: credentials, authenticated: authenticated, process: process, log: log)
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            if !lastLog.contains("Address already in use") { break }
        }
        throw FixtureMissing("moto_server did not start: \(lastLog.suffix(2000))")
    }

    private init(
        port: Int, host: String, credentials: (accessKeyId: String, secretAccessKey: String), authenticated: Bool,
        process: Process, log: URL
    ) {
        self.port = port
        self.host = host
        self.credentials = credentials
        self.authenticated = authenticated
        self.process = process
        self.logURL = log
    }

    /// What the server printed (requests, tracebacks).
    public var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Stops the server and waits for it. SIGKILL: the server keeps nothing worth flushing, and a
    /// child started from the test process may inherit a mask that blocks SIGTERM.
    public func stop() {
        lock.lock()
        let p = process
        process = nil
        lock.unlock()
        guard let p, p.isRunning else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    deinit { stop() }

    /// IAM calls through the `curl` command (its own SigV4 signing), the three the server lets
    /// through unauthenticated: user, allow-all policy, access key.
    private static func createAccessKey(host: String, port: Int) throws -> (accessKeyId: String, secretAccessKey: String) {
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#
        let policyEncoded = policy.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? policy
        let calls = [
            "Action=CreateUser&UserName=jobrun-test&Version=2010-05-08",
            "Action=PutUserPolicy&UserName=jobrun-test&PolicyName=all&PolicyDocument=\(policyEncoded)&Version=2010-05-08",
            "Action=CreateAccessKey&UserName=jobrun-test&Version=2010-05-08",
        ]
        var last = ""
        for call in calls {
            let result = try ChildProcess.run(
                "/usr/bin/curl",
                ["-sS", "--fail-with-body", "--aws-sigv4", "aws:amz:us-east-1:iam", "--user", "bootstrap:bootstrap", "-d", call, "http://\(host):\(port)/"],
                timeout: 30)
            guard result.status == 0 else { throw FixtureMissing("moto IAM setup failed: \(result.stdout) \(result.stderr)") }
            last = result.stdout
        }
        func element(_ name: String) -> String? {
            guard let start = last.range(of: "<\(name)>"), let end = last.range(of: "</\(name)>", range: start.upperBound..<last.endIndex) else {
                return nil
            }
            return String(last[start.upperBound..<end.lowerBound])
        }
        guard let id = element("AccessKeyId"), let secret = element("SecretAccessKey") else {
            throw FixtureMissing("moto IAM setup returned no access key: \(last)")
        }
        return (id, secret)
    }
}
