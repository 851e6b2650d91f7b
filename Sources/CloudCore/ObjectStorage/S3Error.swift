import Foundation

/// A failed S3 call. Names the bucket, the operation, the key when there is one, and the
/// service's error code; never a credential (requests are signed in headers, which no error
/// repeats).
public struct S3Error: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable {
        /// The service answered with an error status (and usually an `<Error>` document).
        case service(status: Int, code: String, message: String)
        /// The request did not complete at the transport level.
        case transport(TransportError)
        /// A 2xx answer that could not be understood.
        case malformedAnswer(String)
        /// The local side of a transfer failed (reading the file, a checksum mismatch).
        case local(String)
    }

    public var bucket: String
    /// What was being done, e.g. `PutObject`, `UploadPart 3`.
    public var operation: String
    public var key: String?
    public var reason: Reason

    public init(bucket: String, operation: String, key: String?, reason: Reason) {
        self.bucket = bucket
        self.operation = operation
        self.key = key
        self.reason = reason
    }

    /// The service's error code (`NoSuchKey`, `SignatureDoesNotMatch`, …), when it gave one.
    public var code: String? {
        if case .service(_, let code, _) = reason { return code }
        return nil
    }

    /// The HTTP status, when the service answered.
    public var status: Int? {
        if case .service(let status, _, _) = reason { return status }
        return nil
    }

    /// Whether trying the same call again may succeed.
    public var isRetryable: Bool {
        switch reason {
        case .service(let status, let code, _):
            return status >= 500 || status == 429
                || ["SlowDown", "RequestTimeout", "RequestTimeTooSkewed", "InternalError", "ServiceUnavailable"].contains(code)
        case .transport(let error): return error.isRetryable
        case .malformedAnswer, .local: return false
        }
    }

    /// The service's codes for a request it will refuse however often it is sent: the
    /// credentials, the signature, the permissions or the bucket are wrong. Fixing them is the
    /// operator's job, and no item is at fault.
    public static let configurationCodes: Set<String> = [
        "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "NoSuchBucket", "InvalidBucketName",
        "AuthorizationHeaderMalformed", "InvalidToken", "ExpiredToken", "InvalidSecurity", "AccountProblem",
        "AllAccessDisabled", "PermanentRedirect", "NotSignedUp",
    ]

    /// Whether the call was refused for the caller's credentials or configuration (see
    /// `configurationCodes`; any other 401 or 403 counts too unless it is retryable, such as
    /// `RequestTimeTooSkewed`), not for the object or a passing fault.
    public var isConfigurationError: Bool {
        guard case .service(let status, let code, _) = reason, !isRetryable else { return false }
        return Self.configurationCodes.contains(code) || status == 401 || status == 403
    }

    public var description: String {
        let target = "bucket \(bucket)" + (key.map { ", key \($0)" } ?? "")
        switch reason {
        case let .service(status, code, message):
            let detail = message.isEmpty ? "" : ": \(message)"
            return "S3 \(operation) failed for \(target): \(code) (HTTP \(status))\(detail)"
        case let .transport(error): return "S3 \(operation) failed for \(target): \(error)"
        case let .malformedAnswer(why): return "S3 \(operation) for \(target): unexpected answer: \(why)"
        case let .local(why): return "S3 \(operation) for \(target): \(why)"
        }
    }
}
