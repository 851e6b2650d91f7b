/// Request signing with AWS Signature Version 4, done by libcurl itself (`CURLOPT_AWS_SIGV4`
/// with `CURLOPT_USERNAME`/`CURLOPT_PASSWORD`).
///
/// libcurl 7.88 signs `host`, `x-amz-date` and every `x-amz-*` header the request carries, and
/// uses the value of an `x-amz-content-sha256` header as the payload hash when one is present
/// (it does not add that header itself, and S3 requires it): the caller sends it, either the
/// body's SHA-256 in hex or `UNSIGNED-PAYLOAD`.
///
/// The description never shows the key id or the secret.
public struct AWSSigV4Signing: Sendable, Equatable, CustomStringConvertible {
    /// `aws:amz:<region>:<service>`, e.g. `aws:amz:us-east-1:s3`.
    public var provider: String
    public var accessKeyId: String
    public var secretAccessKey: String

    public init(region: String, service: String, accessKeyId: String, secretAccessKey: String) {
        provider = "aws:amz:\(region):\(service)"
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
    }

    public var description: String { "SigV4(\(provider), credentials redacted)" }
}
