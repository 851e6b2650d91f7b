import Foundation

/// The production ``Transport``: libcurl's multi interface on one dedicated thread.
///
/// All requests share one multi handle, hence one connection cache: connections to a host (a DC,
/// the CDN, a plain-URL server) are reused, HTTP/2 is negotiated over TLS when the server offers
/// it and then multiplexed, and at most ``TransportConfiguration/maxConnectionsPerHost`` are opened
/// to one host. Create one per process (or per distinct configuration) and share it.
///
/// ```swift
/// var configuration = TransportConfiguration()
/// configuration.maxReceiveBytesPerSecond = 20_000_000   // global, shared by all transfers
/// configuration.idleTimeout = 15
/// let transport = try CurlTransport(configuration: configuration)
/// let part = try await transport.get("https://dc1.example/file", range: HTTPRange(offset: 0, length: 1 << 20))
/// let whole = try await transport.download(url, to: fd, at: 0)          // pwrite at offsets, flat memory
/// let put = try await transport.send(HTTPRequest(url: url, method: .put,
///                                                body: .fileRegion(fd: fd, offset: 0, length: n)))
/// ```
///
/// Threading: `send` only queues the request and suspends; the transport thread configures a
/// pooled easy handle, runs it, and resumes the caller. Body bytes go straight from libcurl's
/// buffer to a preallocated buffer, `pwrite`, or the sink — no per-byte Swift work, no thread per
/// request.
///
/// Dropping the last reference stops the thread; requests still running then fail with
/// ``TransportError/cancelled`` (they cannot be running inside `send`, which retains the transport).
public final class CurlTransport: Transport {
    public let configuration: TransportConfiguration
    private let loop: TransportLoop

    /// Starts the transport thread.
    public init(configuration: TransportConfiguration = TransportConfiguration()) throws {
        self.configuration = configuration
        loop = try TransportLoop(configuration: configuration)
        loop.start()
    }

    deinit {
        loop.stop()
    }

    /// Version of the libcurl in use, e.g. "7.88.1".
    public static var curlVersion: String { CurlGlobal.version }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try Task.checkCancellation()
        let transfer = CurlTransfer(request: request, configuration: configuration)
        let loop = self.loop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.continuation = continuation
                loop.submit(.add(transfer))
            }
        } onCancel: {
            transfer.requestCancel()
            loop.submit(.cancel(transfer))
        }
    }
}
