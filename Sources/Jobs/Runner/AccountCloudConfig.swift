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

    /// Loads `paths.config`.
    public static func load(_ paths: AccountPaths) throws(JobError) -> CloudAccountConfig {
        let path = paths.config.path
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR {
                throw .config(
                    "no cloud configuration at \(ShownText.escaped(path)): create it with the datacenter URLs (see docs/account-config.md), e.g.\n  datacenters:\n    1: http://127.0.0.1:40000"
                )
            }
            throw .config("cannot read \(ShownText.escaped(path)): \(StorageFailure.describe(errno: errno))")
        }
        let text: String
        do { text = try ConfigFile.text(at: path, limit: maxConfigSize, what: "cloud configuration") } catch {
            throw .config("invalid cloud configuration: \(error)")
        }
        return try parse(text, path: path, accountDirectory: paths.directory.path)
    }

    /// Parses config text; `path` names the file in errors, relative credential paths resolve
    /// against `accountDirectory`.
    public static func parse(_ text: String, path: String, accountDirectory: String) throws(JobError) -> CloudAccountConfig {
        do { return try decode(text, path: path, accountDirectory: accountDirectory) } catch {
            throw .config("invalid cloud configuration: \(error)")
        }
    }

    private typealias Section = AccountConfigSection

    private static func decode(_ text: String, path: String, accountDirectory: String) throws(JobFileErrors) -> CloudAccountConfig {
        let origin = SourcePosition(file: path, line: 1, column: 1)
        let root = try ConfigNode.parse(yaml: text, file: path)
        guard let root, case .mapping = root.value else {
            throw JobFileErrors([
                JobFileError(
                    root?.position ?? origin, "the cloud configuration must be a mapping with at least `datacenters:`",
                    expected: "datacenters: {1: http://127.0.0.1:40000}")
            ])
        }
        let (values, errors) = Section.validate(root, fallback: root.position)
        if !errors.isEmpty { throw JobFileErrors(errors) }
        let urls = values[Section.datacenters].urls
        let retry = values[Section.retry]
        var config = CloudAccountConfig(
            datacenters: urls, cdnURL: values[Section.cdn]?.url, mainDc: values[Section.mainDc], authToken: values[Section.authToken]?.text,
            requestTimeout: values[Section.requestTimeout].jobSeconds, connectTimeout: values[Section.connectTimeout].jobSeconds,
            maxAnswerSize: Int(clamping: values[Section.maxAnswerSize].bytes),
            retry: CloudRetryPolicy(
                maxAttempts: retry[AccountRetrySection.maxAttempts], baseDelay: retry[AccountRetrySection.baseDelay].jobSeconds,
                maxDelay: retry[AccountRetrySection.maxDelay].jobSeconds, jitter: retry[AccountRetrySection.jitter],
                maxFloodWait: retry[AccountRetrySection.maxFloodWait].jobSeconds, maxFloodWaits: retry[AccountRetrySection.maxFloodWaits],
                maxMigrations: retry[AccountRetrySection.maxMigrations]))
        config.referenceTTL = values[Section.referenceTTL].jobSeconds
        if let file = values[Section.credentialsFile] {
            let full = file.hasPrefix("/") ? file : (accountDirectory as NSString).appendingPathComponent(file)
            if let refusal = credentialsRefusal(full) { throw JobFileErrors([values.error(Section.credentialsFile, refusal)]) }
            do { config.authToken = try ConfigFile.firstLine(at: full, limit: maxCredentialsSize, what: "credentials file") } catch {
                throw JobFileErrors(error.errors.map { values.error(Section.credentialsFile, "credentials file: " + $0.description) })
            }
        }
        // A problem the client finds points at the key it starts with (`mainDc 9 is not among…`),
        // else at `datacenters:`.
        let problems = config.problems
        if !problems.isEmpty {
            throw JobFileErrors(
                problems.map { problem in
                    let key = Section.parameters.first { problem.hasPrefix($0.spec.name + " ") } ?? Section.datacenters
                    return values.error(key, problem)
                })
        }
        return config
    }

    /// Why the credentials file at `path` must not be used (ssh's rule for private keys), or nil.
    static func credentialsRefusal(_ path: String) -> String? {
        let shown = ShownText.escaped(path)
        var st = stat()
        guard stat(path, &st) == 0 else { return "cannot read the credentials file \(shown): \(StorageFailure.describe(errno: errno))" }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return "the credentials file \(shown) is not a regular file" }
        if st.st_uid != geteuid() && st.st_uid != 0 {
            return "the credentials file \(shown) is owned by \(DataRoot.userName(st.st_uid)), not by \(DataRoot.userName(geteuid())) who runs jobrun"
        }
        if let problem = CredentialFileMode.problem(mode: st.st_mode, group: st.st_gid) {
            return "the credentials file \(shown): \(problem); \(CredentialFileMode.fix(shown))"
        }
        return nil
    }
}
