import CloudCore
import Foundation

/// Reads an account's `config.yaml` (`docs/account-config.md`) into a `CloudAccountConfig`.
///
/// Every problem is a `JobError.config` (exit 78) naming the file, with `line:column` where the
/// YAML has one; a missing file names the path and what to put in it. The auth token comes from
/// `credentialsFile` (preferred: keeps the secret out of the config) or `authToken`, and is never
/// part of any message. Like ssh with a private key, a credentials file that group or others
/// may read, or that another user owns, is refused.
public enum AccountCloudConfig {
    /// Largest `config.yaml` read; a larger file is refused before it is parsed.
    public static let maxConfigSize = 1 << 20
    /// Largest credentials file read.
    public static let maxCredentialsSize = 64 << 10

    /// Keys the file may have.
    static let knownKeys: Set<String> = [
        "datacenters", "cdn", "mainDc", "authToken", "credentialsFile",
        "requestTimeout", "connectTimeout", "maxAnswerSize", "retry", "referenceTTL",
    ]
    static let retryKeys: Set<String> = ["maxAttempts", "baseDelay", "maxDelay", "jitter", "maxFloodWait", "maxFloodWaits", "maxMigrations"]

    /// Loads `paths.config`.
    public static func load(_ paths: AccountPaths) throws(JobError) -> CloudAccountConfig {
        let path = paths.config.path
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR {
                throw .config(
                    "no cloud configuration at \(path): create it with the datacenter URLs (see docs/account-config.md), e.g.\n  datacenters:\n    1: http://127.0.0.1:40000"
                )
            }
            throw .config("cannot read \(path): \(StorageFailure.describe(errno: errno))")
        }
        let bytes: [UInt8]
        switch SmallFile.read(path, limit: maxConfigSize) {
        case .success(let data): bytes = data
        case .failure(let problem): throw .config("cannot read the cloud configuration \(path): \(problem.message)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .config("\(path): the cloud configuration is not UTF-8 text")
        }
        return try parse(text, path: path, accountDirectory: paths.directory.path)
    }

    /// Parses config text; `path` names the file in errors, relative credential paths resolve
    /// against `accountDirectory`.
    public static func parse(_ text: String, path: String, accountDirectory: String) throws(JobError) -> CloudAccountConfig {
        let root: ConfigNode?
        do { root = try ConfigNode.parse(yaml: text, file: path) } catch {
            throw .config("invalid cloud configuration: " + error.errors.map(\.description).joined(separator: "; "))
        }
        guard let root, case .mapping(let entries) = root.value else {
            throw .config(
                "invalid cloud configuration: \(root.map { "\($0.position)" } ?? "\(path):1:1"): the cloud configuration must be a mapping with at least `datacenters:`"
            )
        }
        var decoder = CloudConfigDecoder()
        for entry in entries { decoder.decode(entry) }
        decoder.readCredentials(accountDirectory: accountDirectory)
        var config = decoder.config
        config.mainDc = decoder.mainDc ?? config.datacenters.keys.min() ?? 1
        // Problems of the values as a whole point at `datacenters:` (or the top of the file).
        let anchor = entries.first { $0.key == "datacenters" }?.keyPosition ?? root.position
        let problems = decoder.problems + config.problems.map { "\(anchor): \($0)" }
        if !problems.isEmpty { throw .config("invalid cloud configuration: " + problems.joined(separator: "; ")) }
        return config
    }

    /// Why the credentials file at `path` must not be used (ssh's rule for private keys), or nil.
    static func credentialsRefusal(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return "cannot read the credentials file \(path): \(StorageFailure.describe(errno: errno))" }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return "the credentials file \(path) is not a regular file" }
        if st.st_uid != geteuid() && st.st_uid != 0 {
            return "the credentials file \(path) is owned by \(DataRoot.userName(st.st_uid)), not by \(DataRoot.userName(geteuid())) who runs jobrun"
        }
        if let problem = CredentialFileMode.problem(mode: st.st_mode, group: st.st_gid) {
            return "the credentials file \(path): \(problem); \(CredentialFileMode.fix(path))"
        }
        return nil
    }

    /// A key as errors show it: at most 40 characters, so an error never replays a file's lines.
    static func shown(_ key: String) -> String {
        key.count <= 40 ? key : String(key.prefix(40)) + "…"
    }
}
