import Foundation

/// A TCP listener on 127.0.0.1 (ephemeral port) that hands each accepted connection's fd to a
/// handler on its own thread — for tests that need a server misbehaving on purpose (never
/// answering, answering slowly, dropping the connection) or a tiny echo server.
/// The listener closes the fd when the handler returns (or shuts it down on ``stop()``).
public final class LoopbackListener: @unchecked Sendable {
    // @unchecked Sendable: `fd` and `port` are immutable; `closed` is guarded by `lock`.
    public let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var closed = false
    private var connections: [Int32] = []

    /// Starts listening; `handler` runs once per connection on a new thread.
    public init(backlog: Int32 = 64, handler: @escaping @Sendable (Int32) -> Void) throws {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(s, backlog) == 0 else {
            let e = errno
            close(s)
            throw POSIXError(.init(rawValue: e) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) }
        }
        fd = s
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in
            while true {
                let client = accept(s, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                self.lock.lock()
                if self.closed {
                    self.lock.unlock()
                    Foundation.close(client)
                    return
                }
                self.connections.append(client)
                self.lock.unlock()
                Thread.detachNewThread {
                    handler(client)
                    self.closeConnection(client)
                }
            }
        }
        thread.start()
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops accepting and shuts down connections still open (their handlers see EOF/EPIPE).
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        // Under the lock, so no handler can close (and the kernel reuse) one of these meanwhile.
        for c in connections { shutdown(c, Int32(SHUT_RDWR)) }
    }

    private func closeConnection(_ client: Int32) {
        lock.lock()
        connections.removeAll { $0 == client }
        close(client)
        lock.unlock()
    }

    /// Blocks until the peer closes the connection (or ``stop()``); for "never answers" servers.
    public static func waitForClose(_ client: Int32) {
        var byte: UInt8 = 0
        while read(client, &byte, 1) > 0 {}
    }

    deinit { stop() }

    // MARK: helpers for handlers

    /// Reads one HTTP request head (up to CRLFCRLF) and, if it declares `Content-Length`, its
    /// body. Returns nil on EOF.
    public static func readRequest(_ client: Int32) -> (head: String, body: Data)? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let separator = Data("\r\n\r\n".utf8)
        while data.range(of: separator) == nil {
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { return nil }
            data.append(buffer, count: n)
        }
        let end = data.range(of: separator)!
        let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
        var body = Data(data[end.upperBound...])
        var length = 0
        for line in head.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        while body.count < length {
            let n = read(client, &buffer, min(buffer.count, length - body.count))
            if n <= 0 { return nil }
            body.append(buffer, count: n)
        }
        return (head, body)
    }

    /// Writes all of `data`; false if the peer went away.
    @discardableResult
    public static func writeAll(_ client: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = send(client, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                done += n
            }
            return true
        }
    }
}
