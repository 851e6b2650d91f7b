/// The JSON error envelope every failing call answers with:
/// `{"error": {"code": 400, "name": "FILE_REFERENCE_EXPIRED", "message": "…"}}`.
public struct CloudErrorEnvelope: Codable, Sendable, Equatable {
    public var error: CloudError
    public init(error: CloudError) { self.error = error }
}

/// One cloud error: HTTP status code, Telegram-style name, optional human text.
/// Also a Swift `Error`, so server and client code can throw it directly.
public struct CloudError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status code (303, 400, 404, 420, 500).
    public var code: Int
    /// The wire name, e.g. `FLOOD_WAIT_3`.
    public var name: CloudErrorName
    /// Optional human-readable detail; never needed for handling.
    public var message: String?

    public init(_ name: CloudErrorName, message: String? = nil) {
        self.code = name.httpStatus
        self.name = name
        self.message = message
    }

    public init(code: Int, name: CloudErrorName, message: String? = nil) {
        self.code = code
        self.name = name
        self.message = message
    }

    public var description: String {
        if let message { return "\(code) \(name.rawValue): \(message)" }
        return "\(code) \(name.rawValue)"
    }
}
