import Foundation
import XCTest

/// A real nginx serving a directory on a free 127.0.0.1 port, started unprivileged with
/// `nginx -p WORKDIR -c nginx.conf` in the foreground (`daemon off`) and stopped with SIGTERM.
///
/// Static files with sendfile, keep-alive and Range support (206); `PUT`/`DELETE` under
/// `/upload/` (WebDAV module, files land in `root/upload/…`); optional TLS with HTTP/2 (ALPN) or
/// cleartext HTTP/2 with prior knowledge. `access_log` is off.
///
/// ``start(serving:options:)`` throws `XCTSkip` with a clear message when nginx is not installed.
public final class NginxServer: @unchecked Sendable {
    // @unchecked Sendable: all stored properties are immutable except `process`, which is only
    // touched by `stop()` under `lock`.

    /// How to run the server.
    public struct Options: Sendable {
        /// PEM certificate and key: listen with TLS (and HTTP/2 via ALPN when `http2`).
        public var tls: (certificate: String, key: String)?
        /// Offer HTTP/2: over TLS via ALPN, or cleartext with prior knowledge (h2c) without TLS.
        public var http2: Bool
        /// nginx worker processes.
        public var workers: Int
        /// Raw directives appended inside the `server { }` block.
        public var extraServerConfig: String
        public init(
            tls: (certificate: String, key: String)? = nil, http2: Bool = false,
            workers: Int = 1, extraServerConfig: String = ""
        ) {
            self.tls = tls
            self.http2 = http2
            self.workers = workers
            self.extraServerConfig = extraServerConfig
        }
    }

    /// The directory served at `/`.
    public let root: URL
    public let port: Int
    /// Holds nginx.conf, the pid file, error.log and temp directories.
    public let workDirectory: URL
    public let usesTLS: Bool
    private let lock = NSLock()
    private var process: Process?

    /// `http://127.0.0.1:PORT` (or `https://localhost:PORT` with TLS).
    public var baseURL: String { usesTLS ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)" }

    /// `baseURL` + `/` + `path`.
    public func url(_ path: String) -> String { "\(baseURL)/\(path)" }

    /// The nginx binary, if installed.
    public static var executable: String? {
        let paths =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/usr/local/sbin", "/sbin"]
        return paths.map { "\($0)/nginx" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts nginx serving `root`; waits until it accepts connections.
    public static func start(serving root: URL, options: Options = Options()) throws -> NginxServer {
        guard let executable else {
            throw XCTSkip("nginx is not installed (apt-get install -y nginx-light); skipping the test that needs it")
        }
        var lastError = ""
        for _ in 0..<5 {
            let port = try FreePort.pick()
            let work = root.deletingLastPathComponent()
                .appendingPathComponent(".nginx-\(port)-\(UUID().uuidString.prefix(8))", isDirectory: true)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let conf = configuration(root: root.path, work: work.path, port: port, options: options)
            let confURL = work.appendingPathComponent("nginx.conf")
            try conf.write(to: confURL, atomically: true, encoding: .utf8)

            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["-p", work.path, "-c", confURL.path, "-e", work.appendingPathComponent("error.log").path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let server = NginxServer(root: root, port: port, work: work, tls: options.tls != nil, process: process)
            // Generous: on a loaded machine nginx can take seconds to bind.
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                if !process.isRunning { break }
                if canConnect(port: port) { return server }
                usleep(20_000)
            }
            lastError = (try? String(contentsOf: work.appendingPathComponent("error.log"), encoding: .utf8)) ?? "no error.log"
            server.stop()
            if !lastError.contains("Address already in use") { break }
        }
        throw NginxError(message: "nginx did not start: \(lastError)")
    }

    private init(root: URL, port: Int, work: URL, tls: Bool, process: Process) {
        self.root = root
        self.port = port
        self.workDirectory = work
        self.usesTLS = tls
        self.process = process
    }

    /// Stops nginx (SIGTERM to the master, which stops its workers) and waits for it.
    public func stop() {
        lock.lock()
        let p = process
        process = nil
        lock.unlock()
        guard let p else { return }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: workDirectory)
    }

    deinit { stop() }

    /// The error raised when nginx exists but fails to start.
    public struct NginxError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    private static func configuration(root: String, work: String, port: Int, options: Options) -> String {
        var listen = "listen 127.0.0.1:\(port)"
        if options.tls != nil { listen += " ssl" }
        if options.http2 { listen += " http2" }
        let tls = options.tls.map { "ssl_certificate \($0.certificate);\n        ssl_certificate_key \($0.key);" } ?? ""
        // As root, keep workers as root so they can read/write the test's directories.
        let user = geteuid() == 0 ? "user root root;" : ""
        return """
            \(user)
            worker_processes \(options.workers);
            daemon off;
            master_process on;
            pid \(work)/nginx.pid;
            error_log \(work)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_timeout 65;
                keepalive_requests 100000;
                http2_max_requests 100000;
                default_type application/octet-stream;
                client_body_temp_path \(work)/body;
                proxy_temp_path \(work)/proxy;
                fastcgi_temp_path \(work)/fastcgi;
                uwsgi_temp_path \(work)/uwsgi;
                scgi_temp_path \(work)/scgi;
                server {
                    \(listen);
                    server_name localhost;
                    root \(root);
                    \(tls)
                    location / { }
                    location /upload/ {
                        dav_methods PUT DELETE;
                        create_full_put_path on;
                        client_max_body_size 0;
                    }
                    \(options.extraServerConfig)
                }
            }
            """
    }

    static func canConnect(port: Int, host: String = "127.0.0.1") -> Bool {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { return false }
        defer { close(s) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// A throwaway certificate authority for TLS tests, made with the `openssl` command.
public enum TestCertificate {
    /// Writes `cert.pem` (self-signed, CN and SAN `localhost` + `127.0.0.1`) and `key.pem` into
    /// `directory`; the certificate doubles as the CA file. `openssl` is installed by
    /// `scripts/install-deps.sh`, so its absence fails the test instead of skipping it.
    public static func make(in directory: URL) throws -> (certificate: String, key: String) {
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        guard
            let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { throw FixtureMissing("openssl is not installed (scripts/install-deps.sh installs it)") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: openssl)
        p.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw NginxServer.NginxError(message: "openssl req failed with status \(p.terminationStatus)")
        }
        return (cert, key)
    }
}
