import Foundation
import Synchronization

/// The HTTP endpoint of `jobrun schedule --listen ADDR`: `GET /metrics` (the Prometheus text
/// format), `/healthz` (the process answers) and `/readyz` (the scheduler is scheduling; 503
/// once it drains after SIGTERM). One request per connection, answered in turn on a thread of
/// its own: a scrape or a probe, never a public web server. Each connection has 5 s to send its
/// request.
///
/// It serves only what `respond` returns: the metrics files of the root (which hold no secret)
/// and fixed words.
public final class MetricsEndpoint: Sendable {
    /// An answer: status, content type and body.
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: String

        public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    /// The port bound (useful with port 0).
    public let port: UInt16

    /// `host:port`, `:port` (every IPv4 address) or `[v6]:port`; nil when it is none of these.
    public static func parse(_ address: String) -> (host: String, port: UInt16)? {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }

    /// Binds `address` and starts answering with `respond(path)`.
    public init(address: String, respond: @escaping @Sendable (String) -> Response) throws(JobError) {
        guard let (host, port) = Self.parse(address) else {
            throw .config("--listen \(address): give host:port, :port or [v6]:port (e.g. 127.0.0.1:9464)")
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        let isV4 = inet_pton(AF_INET, host, &v4) == 1
        guard isV4 || inet_pton(AF_INET6, host, &v6) == 1 else { throw .config("--listen \(address): \(host) is not an IP address") }
        let fd = socket(isV4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .config("--listen \(address): cannot open a socket: \(StorageFailure.describe(errno: errno))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        if isV4 {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            a.sin_addr = v4
            bound = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        } else {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            a.sin6_addr = v6
            bound = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        if bound == 0 { bound = listen(fd, 16) }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw .config("--listen \(address): cannot listen: \(StorageFailure.describe(errno: e))")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let boundPort = withUnsafePointer(to: &storage) { pointer -> UInt16 in
            isV4
                ? pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
                : pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
        }
        self.fd = fd
        self.port = boundPort
        let thread = Thread { [self] in self.serve(respond) }
        thread.name = "jobrun-listen"
        thread.start()
    }

    /// Stops accepting; a request being answered is finished.
    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private func serve(_ respond: @Sendable (String) -> Response) {
        defer { close(fd) }
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            answer(client, respond)
            close(client)
        }
    }

    private func answer(_ client: Int32, _ respond: @Sendable (String) -> Response) {
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < 16_384 {
            let n = read(client, &buffer, buffer.count)
            guard n > 0 else { return }
            head += buffer[..<n]
            if head.count >= 4, head.indices.dropLast(3).contains(where: { head[$0] == 13 && head[$0 + 1] == 10 && head[$0 + 2] == 13 && head[$0 + 3] == 10 }) {
                break
            }
        }
        let requestLine = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self).split(separator: " ")
        let response: Response
        if requestLine.count < 2 {
            response = Response(status: 400, body: "bad request\n")
        } else if requestLine[0] != "GET" && requestLine[0] != "HEAD" {
            response = Response(status: 405, body: "only GET\n")
        } else {
            let path = String(requestLine[1].prefix { $0 != "?" })
            response = respond(path)
        }
        let body = requestLine.first == "HEAD" ? "" : response.body
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"][response.status] ?? "Status"
        let text =
            "HTTP/1.1 \(response.status) \(reason)\r\nContent-Type: \(response.contentType)\r\nContent-Length: \(response.body.utf8.count)\r\nConnection: close\r\n\r\n"
            + body
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
