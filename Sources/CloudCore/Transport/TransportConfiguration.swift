import Foundation

/// Settings of a ``CurlTransport``, fixed when the transport is created.
///
/// Timeouts are in seconds. Limits of `nil` mean "unlimited".
public struct TransportConfiguration: Sendable, Equatable {
    /// Which HTTP version to ask for.
    public enum HTTPVersion: Sendable, Equatable {
        /// HTTP/1.1 only.
        case http1_1
        /// HTTP/2 over TLS when the server offers it (ALPN), HTTP/1.1 over cleartext. The default.
        case http2OverTLS
        /// HTTP/2 over cleartext without upgrade ("prior knowledge"); for servers known to speak h2c.
        case http2PriorKnowledge
    }

    /// Most connections one transport thread keeps open to one host
    /// (`CURLMOPT_MAX_HOST_CONNECTIONS`). Transfers beyond this wait in libcurl's queue (or are
    /// multiplexed over HTTP/2). Each of the ``streamingThreads`` has connections of its own.
    /// Transfers keep as many requests in flight as the measured throughput calls for
    /// (`AdaptiveConcurrency`), which over HTTP/1.1 to a far server is up to their ceilings
    /// (`MultipartFetchConfiguration.maxConcurrentParts`, `MultipartUpload.maxConcurrentFiles`):
    /// this is as many, so that the limit decides and never libcurl's queue (with fewer
    /// connections than requests in flight, a round trip carries only as many as there are
    /// connections, and the limit grows without gaining anything).
    public var maxConnectionsPerHost: Int = 128
    /// Most connections one transport thread keeps open in total
    /// (`CURLMOPT_MAX_TOTAL_CONNECTIONS`); also the size of its connection cache: two hosts'
    /// worth (a DC's API and its files, or two DCs).
    public var maxTotalConnections: Int = 256
    /// Threads that receive answers streamed to a file or a sink
    /// (``ResponseDestination/fileDescriptor(_:offset:maxLength:)``, ``ResponseDestination/sink(maxLength:_:)``):
    /// such a request goes to the thread with the fewest requests in flight. Every other request
    /// (collected answers, uploads) runs on the first thread, so API calls keep sharing one
    /// connection cache. More than one lets the per-byte work of a large download (receiving,
    /// ``HTTPRequest/hashBody``, writing into the file) use more than one core; the further
    /// threads start with the first streamed answer. A bandwidth limit
    /// (``maxReceiveBytesPerSecond``, ``maxSendBytesPerSecond``) keeps every request on one
    /// thread, where the limit is shared exactly. Default: two on a machine with two or more
    /// cores, else one.
    public var streamingThreads: Int = min(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Most transfers multiplexed on one HTTP/2 connection (`CURLMOPT_MAX_CONCURRENT_STREAMS`).
    public var maxStreamsPerConnection: Int = 100
    /// Time allowed to establish a connection, TLS handshake included.
    public var connectTimeout: Double = 10
    /// A transfer that moves fewer than `lowSpeedLimit` bytes per second for `idleTimeout`
    /// seconds is aborted (`CURLOPT_LOW_SPEED_LIMIT/TIME`): the idle timeout. libcurl counts it
    /// in whole seconds (rounded up); 0 disables it.
    public var idleTimeout: Double = 30
    /// See ``idleTimeout``.
    public var lowSpeedLimit: Int = 1
    /// Default total time allowed for one request; a request may override it. `nil`: none.
    /// Under a bandwidth limit (``maxReceiveBytesPerSecond``, ``maxSendBytesPerSecond``) no
    /// total time applies: a paced transfer ends with its bytes, or with a stall of
    /// ``idleTimeout`` (libcurl does not count time paused by the limit as a stall).
    public var requestTimeout: Double? = nil
    /// Global receive limit in bytes per second, shared by all running transfers of this transport:
    /// a token bucket charged in the write callback pauses transfers when it runs dry (see
    /// `BandwidthLimiter`; libcurl's own `CURLOPT_MAX_RECV_SPEED_LARGE` is per transfer and lets
    /// small files burst through).
    public var maxReceiveBytesPerSecond: Int? = nil
    /// Global send limit in bytes per second, applied like ``maxReceiveBytesPerSecond``.
    public var maxSendBytesPerSecond: Int? = nil
    /// Verify the server's certificate and host name (`CURLOPT_SSL_VERIFYPEER/HOST`). Keep on.
    public var verifyTLS: Bool = true
    /// A CA bundle (PEM) to trust, e.g. a test CA (`CURLOPT_CAINFO`). It replaces the default
    /// bundle *file*; the system CA directory (`/etc/ssl/certs` on Debian, `CURLOPT_CAPATH`) stays
    /// trusted, so public servers keep verifying. `nil` uses the system store only.
    public var caFile: String? = nil
    /// HTTP version policy.
    public var httpVersion: HTTPVersion = .http2OverTLS
    /// Largest body collected into memory when a request does not set its own limit.
    public var maxCollectedBodySize: Int = 16 << 20
    /// libcurl's receive buffer per transfer (`CURLOPT_BUFFERSIZE`); larger means fewer write
    /// callbacks and syscalls on fast links, but every stream in flight holds one beside its own
    /// part buffer, whose bytes are copied out of it. 64 KiB: against 256 KiB the 2 GiB download
    /// kept its throughput at both round trips and its eight parts in flight held 1.5 MiB less.
    public var receiveBufferSize: Int = 64 << 10
    /// Follow redirects (at most ``maxRedirects``).
    public var followRedirects: Bool = true
    /// See ``followRedirects``.
    public var maxRedirects: Int = 5
    /// `User-Agent` header sent with every request.
    public var userAgent: String = "jobrun/1"
    /// Idle easy handles kept for reuse: as many as one host's connections, so that a window
    /// of requests in flight does not set up fresh handles for every round trip.
    public var handlePoolSize: Int = 128

    /// The defaults described on each property.
    public init() {}
}
