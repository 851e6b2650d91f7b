/// A successful (2xx) answer to a raw `CloudClient.send` call, with where it came from.
public struct CloudAnswer: Sendable {
    /// The HTTP response (body empty when it was streamed to a file or a sink).
    public var response: HTTPResponse
    /// Where the answer came from, after migrations.
    public var endpoint: CloudEndpoint
    /// The DC that answered, when it was a DC (remember it for the next part of the same file).
    public var dc: Int?
    /// HTTP exchanges it took (1 = no retry).
    public var attempts: Int
}
