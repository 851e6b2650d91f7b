import Foundation

/// The answer to an ``HTTPRequest``: the final response after redirects.
public struct HTTPResponse: Sendable {
    /// Status code, e.g. 200, 206, 404.
    public var status: Int
    /// Header fields of the final response, in order.
    public var headers: [HTTPHeader]
    /// The collected body (``ResponseDestination/collect(maxSize:)``), or for a streamed request
    /// that got a non-2xx status, the first 64 KiB of the error body. Empty otherwise.
    public var body: Data
    /// Body bytes received (written to the destination, for a 2xx streamed request).
    public var bytesReceived: Int64
    /// The URL finally fetched (after redirects).
    public var effectiveURL: String
    /// Negotiated HTTP version: 1 (1.0/1.1), 2 or 3; 0 when unknown.
    public var httpVersion: Int
    /// New connections this transfer had to open (`CURLINFO_NUM_CONNECTS`): 0 when it reused
    /// one from the connection cache.
    public var newConnections: Int
    /// Seconds from start to end of the transfer (`CURLINFO_TOTAL_TIME`).
    public var totalTime: Double
    /// SHA-256 of the body bytes delivered (collected, written or handed to the sink), when the
    /// request asked for it (``HTTPRequest/hashBody``).
    public var bodySHA256: Data?

    public init(
        status: Int, headers: [HTTPHeader], body: Data, bytesReceived: Int64,
        effectiveURL: String, httpVersion: Int, newConnections: Int, totalTime: Double
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bytesReceived = bytesReceived
        self.effectiveURL = effectiveURL
        self.httpVersion = httpVersion
        self.newConnections = newConnections
        self.totalTime = totalTime
    }

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.isNamed(name) }?.value
    }

    /// True for 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// `Content-Range: bytes first-last/total` parsed, when present.
    public var contentRange: (first: Int64, last: Int64, total: Int64?)? {
        guard let value = header("Content-Range") else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let rangeAndTotal = parts[1].split(separator: "/", maxSplits: 1)
        guard rangeAndTotal.count == 2 else { return nil }
        let bounds = rangeAndTotal[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]) else { return nil }
        return (first, last, Int64(rangeAndTotal[1]))
    }
}
