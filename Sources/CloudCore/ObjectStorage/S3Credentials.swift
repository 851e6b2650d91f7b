import Foundation

/// The key pair (and optional session token) that signs S3 requests. Its description never
/// shows any of the values, so it can be logged or put in an error by mistake without harm.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible {
    public var accessKeyId: String
    public var secretAccessKey: String
    /// Temporary credentials (STS) carry a token sent as `x-amz-security-token`.
    public var sessionToken: String?

    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String { "S3 credentials (redacted)" }

    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally `AWS_SESSION_TOKEN`; `nil`
    /// when neither key variable is set, an error when only one is.
    public static func fromEnvironment(_ environment: [String: String]) throws -> S3Credentials? {
        let id = environment["AWS_ACCESS_KEY_ID"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = environment["AWS_SECRET_ACCESS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        switch (id, secret) {
        case (nil, nil): return nil
        case (let id?, let secret?):
            let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            return S3Credentials(accessKeyId: id, secretAccessKey: secret, sessionToken: token)
        case (nil, _): throw S3CredentialsError.incompleteEnvironment(missing: "AWS_ACCESS_KEY_ID")
        case (_, nil): throw S3CredentialsError.incompleteEnvironment(missing: "AWS_SECRET_ACCESS_KEY")
        }
    }

    /// Reads an AWS shared-credentials file (`[profile]` sections of `aws_access_key_id`,
    /// `aws_secret_access_key`, `aws_session_token`). The file must be a regular file that only
    /// its owner can read or write (mode 0600 or stricter, or a Kubernetes Secret's 0440 in one of
    /// this process's groups: `CredentialFileMode`); anything else is refused, since a readable
    /// key file is a leaked key.
    public static func load(file path: String, profile: String = "default") throws -> S3Credentials {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw S3CredentialsError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw S3CredentialsError.unreadable(path: path, reason: "not a regular file")
        }
        let mode = info.st_mode & 0o777
        guard CredentialFileMode.problem(mode: mode, group: info.st_gid) == nil else { throw S3CredentialsError.notPrivate(path: path, mode: mode) }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw S3CredentialsError.unreadable(path: path, reason: "cannot read it as UTF-8 text")
        }
        var section: String? = nil
        var values: [String: String] = [:]
        var sawProfile = false
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else {
                    throw S3CredentialsError.malformed(path: path, line: index + 1, reason: "unterminated section header")
                }
                var name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if name.hasPrefix("profile ") { name = String(name.dropFirst(8)).trimmingCharacters(in: .whitespaces) }
                section = name
                if name == profile { sawProfile = true }
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw S3CredentialsError.malformed(path: path, line: index + 1, reason: "expected key = value")
            }
            guard section == profile else { continue }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            values[key] = value
        }
        guard sawProfile else { throw S3CredentialsError.missingProfile(path: path, profile: profile) }
        guard let id = values["aws_access_key_id"], !id.isEmpty else {
            throw S3CredentialsError.missingValue(path: path, profile: profile, key: "aws_access_key_id")
        }
        guard let secret = values["aws_secret_access_key"], !secret.isEmpty else {
            throw S3CredentialsError.missingValue(path: path, profile: profile, key: "aws_secret_access_key")
        }
        let token = values["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyId: id, secretAccessKey: secret, sessionToken: token)
    }
}

/// Why credentials could not be obtained. Names the file, line or variable; never a value.
public enum S3CredentialsError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notPrivate(path: String, mode: mode_t)
    case malformed(path: String, line: Int, reason: String)
    case missingProfile(path: String, profile: String)
    case missingValue(path: String, profile: String, key: String)
    case incompleteEnvironment(missing: String)
    case none

    public var description: String {
        switch self {
        case let .unreadable(path, reason): return "S3 credentials file \(path): \(reason)"
        case let .notPrivate(path, mode):
            return "S3 credentials file \(path) has mode \(String(mode, radix: 8)); it must be readable by its owner only: \(CredentialFileMode.fix(path))"
        case let .malformed(path, line, reason): return "S3 credentials file \(path):\(line): \(reason)"
        case let .missingProfile(path, profile): return "S3 credentials file \(path) has no [\(profile)] section"
        case let .missingValue(path, profile, key): return "S3 credentials file \(path): [\(profile)] has no \(key)"
        case let .incompleteEnvironment(missing):
            return "S3 credentials from the environment are incomplete: \(missing) is not set"
        case .none:
            return "no S3 credentials: set credentialsFile in the objectStorage configuration or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        }
    }
}
