/// The seam between the cloud client and the network: sends one HTTP request, returns its
/// response. ``CurlTransport`` is the real one; tests and layers above may wrap it.
///
/// Contract: HTTP statuses are returned, not thrown; transport failures throw ``TransportError``;
/// cancelling the calling task aborts the request promptly and throws `CancellationError`.
public protocol Transport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

extension Transport {
    /// GET `url` (optionally a range) into memory.
    public func get(_ url: String, range: HTTPRange? = nil, headers: [HTTPHeader] = []) async throws -> HTTPResponse {
        try await send(.get(url, range: range, headers: headers))
    }

    /// GET `url` (optionally a range) written to `fd` at `offset`; returns the response with an
    /// empty body (or an error body for a non-2xx status).
    public func download(
        _ url: String, range: HTTPRange? = nil, to fd: Int32, at offset: Int64,
        maxLength: Int64? = nil, headers: [HTTPHeader] = []
    ) async throws -> HTTPResponse {
        try await send(
            HTTPRequest(
                url: url, headers: headers, range: range,
                destination: .fileDescriptor(fd, offset: offset, maxLength: maxLength)))
    }
}
