import Foundation
import Synchronization

/// The production ``Transport``: libcurl's multi interface on dedicated threads.
///
/// Requests share a multi handle, hence a connection cache: connections to a host (a DC, the CDN,
/// a plain-URL server) are reused, HTTP/2 is negotiated over TLS when the server offers it and
/// then multiplexed, and one thread opens at most ``TransportConfiguration/maxConnectionsPerHost``
/// to one host. Answers streamed to a file or a sink are spread over
/// ``TransportConfiguration/streamingThreads`` such threads (each with its own multi handle and
/// connections), so that large downloads are not bound to one core. Create one per process (or
/// per distinct configuration) and share it.
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
/// Threading: `send` only queues the request and suspends; a transport thread configures a
/// pooled easy handle, runs it, and resumes the caller. Body bytes go straight from libcurl's
/// buffer to a preallocated buffer, `pwrite`, or the sink — no per-byte Swift work, no thread per
/// request.
///
/// Dropping the last reference stops the threads; requests still running then fail with
/// ``TransportError/cancelled`` (they cannot be running inside `send`, which retains the transport).
public final class CurlTransport: Transport {
    public let configuration: TransportConfiguration
    /// Runs every request, streamed answers included.
    private let loop: TransportLoop
    /// The further threads for streamed answers, started with the first such request.
    private let streamingLoops = Mutex<[TransportLoop]>([])
    /// Urgent requests running, seen by every thread (``HTTPRequest/urgent``).
    private let urgent = UrgentRequests()

    /// Starts the first transport thread.
    public init(configuration: TransportConfiguration = TransportConfiguration()) throws {
        self.configuration = configuration
        loop = try TransportLoop(configuration: configuration, urgent: urgent)
        loop.start()
    }

    deinit {
        loop.stop()
        streamingLoops.withLock { $0.forEach { $0.stop() } }
    }

    /// Version of the libcurl in use, e.g. "7.88.1".
    public static var curlVersion: String { CurlGlobal.version }

    /// How many of libcurl's transfer buffers (receive and upload) this process has served from
    /// kept blocks rather than fresh memory (see `CurlMemory`).
    public static var reusedTransferBuffers: Int { CurlMemory.reused }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try Task.checkCancellation()
        let transfer = CurlTransfer(request: request, configuration: configuration)
        let loop = try self.loop(for: request)
        loop.inFlight.add(1, ordering: .relaxed)
        defer { loop.inFlight.subtract(1, ordering: .relaxed) }
        if request.urgent {
            // Every thread holds its other transfers back from now until the answer is here.
            urgent.begin()
            wakeAll()
        }
        defer {
            if request.urgent {
                urgent.end()
                wakeAll()
            }
        }
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

    /// The thread for `request`: the first for collected answers and uploads; for an answer
    /// streamed to a file or a sink, the thread with the fewest requests in flight.
    private func loop(for request: HTTPRequest) throws -> TransportLoop {
        guard spreadsStreams, request.destination.isStreamed else { return loop }
        return try streamingLoops.withLock { others in
            if others.isEmpty {
                others = try (1..<configuration.streamingThreads).map { _ in try TransportLoop(configuration: configuration, urgent: urgent) }
                others.forEach { $0.start() }
            }
            return others.reduce(loop) { $1.inFlight.load(ordering: .relaxed) < $0.inFlight.load(ordering: .relaxed) ? $1 : $0 }
        }
    }

    /// Wakes every thread to look at the urgent requests again.
    private func wakeAll() {
        loop.wake()
        streamingLoops.withLock { $0.forEach { $0.wake() } }
    }

    /// More than one thread for streamed answers; a bandwidth limit needs a single thread.
    private var spreadsStreams: Bool {
        configuration.streamingThreads > 1 && configuration.maxReceiveBytesPerSecond == nil && configuration.maxSendBytesPerSecond == nil
    }
}
