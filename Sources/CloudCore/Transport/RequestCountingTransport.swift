import Synchronization

/// A transport that counts the requests it has in flight (sent, not yet answered) and the most
/// it ever had at once, measured where the requests leave rather than taken from a fetcher's own
/// bookkeeping: how many parts a download really kept in flight, and how many it sent.
public final class RequestCountingTransport: Transport {
    private let inner: any Transport
    private let counts = Mutex((now: 0, peak: 0, sent: 0))

    public init(_ inner: any Transport) { self.inner = inner }

    /// The most requests that were in flight at once.
    public var peak: Int { counts.withLock { $0.peak } }

    /// The requests sent so far.
    public var sent: Int { counts.withLock { $0.sent } }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        counts.withLock { c in
            c.now += 1
            c.sent += 1
            c.peak = max(c.peak, c.now)
        }
        defer { counts.withLock { $0.now -= 1 } }
        return try await inner.send(request)
    }
}
