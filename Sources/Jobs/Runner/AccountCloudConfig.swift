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
        switch readSmallFile(path, limit: maxConfigSize) {
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
        var problems: [String] = []
        func problem(_ node: ConfigNode, _ message: String) { problems.append("\(node.position): \(message)") }
        var dcs: [Int: String] = [:]
        var cdn: String?
        var mainDc: Int?
        var token: String?
        var credentialsFile: (String, ConfigNode)?
        var config = CloudAccountConfig(datacenters: [:])
        for entry in entries {
            let v = entry.value
            switch entry.key {
            case "datacenters":
                switch v.value {
                case .mapping(let items):
                    for item in items {
                        guard let id = Int(item.key) else { problem(v, "datacenter key `\(item.key)` must be a DC id (1, 2, …)"); continue }
                        guard let url = item.value.scalarText else { problem(item.value, "datacenter \(id) needs a URL"); continue }
                        dcs[id] = url
                    }
                case .sequence(let items):
                    // The form cloudd prints: [{id: 1, url: …}, …]
                    for item in items {
                        guard case .mapping(let fields) = item.value,
                            let id = fields.first(where: { $0.key == "id" })?.value.scalarText.flatMap({ Int($0) }),
                            let url = fields.first(where: { $0.key == "url" })?.value.scalarText
                        else {
                            problem(item, "each datacenter needs `id` and `url`"); continue
                        }
                        dcs[id] = url
                    }
                default: problem(v, "`datacenters` must map DC ids to URLs")
                }
            case "cdn":
                if case .mapping(let fields) = v.value {
                    cdn = fields.first(where: { $0.key == "url" })?.value.scalarText
                } else {
                    cdn = v.isNull ? nil : v.scalarText
                }
            case "mainDc":
                guard let n = v.scalarText.flatMap({ Int($0) }) else { problem(v, "`mainDc` must be a DC id"); continue }
                mainDc = n
            case "authToken":
                switch v.value {
                case .scalar(let text, let type) where type != .null && !text.isEmpty: token = text
                case .scalar: problem(v, "`authToken` is empty; give the token, or remove the key (better: `credentialsFile`)")
                default: problem(v, "`authToken` must be a string, not \(v.typeName) (its value is not shown)")
                }
            case "credentialsFile":
                guard let s = v.scalarText, !s.isEmpty else { problem(v, "`credentialsFile` must be a path"); continue }
                credentialsFile = (s, v)
            case "requestTimeout":
                if let d = seconds(v, &problems) { config.requestTimeout = d }
            case "referenceTTL":
                if let d = seconds(v, &problems) { config.referenceTTL = d }
            case "connectTimeout":
                if let d = seconds(v, &problems) { config.connectTimeout = d }
            case "maxAnswerSize":
                switch ByteSize.parse(v.scalarText ?? "") {
                case .success(let n): config.maxAnswerSize = Int(clamping: n)
                case .failure(let e): problem(v, "maxAnswerSize: \(e.message)")
                }
            case "retry":
                guard case .mapping(let fields) = v.value else { problem(v, "`retry` must be a mapping"); continue }
                for f in fields {
                    let n = f.value
                    switch f.key {
                    case "maxAttempts": if let i = integer(n, &problems) { config.retry.maxAttempts = i }
                    case "maxFloodWaits": if let i = integer(n, &problems) { config.retry.maxFloodWaits = i }
                    case "maxMigrations": if let i = integer(n, &problems) { config.retry.maxMigrations = i }
                    case "baseDelay": if let d = seconds(n, &problems) { config.retry.baseDelay = d }
                    case "maxDelay": if let d = seconds(n, &problems) { config.retry.maxDelay = d }
                    case "maxFloodWait": if let d = seconds(n, &problems) { config.retry.maxFloodWait = d }
                    case "jitter":
                        guard let x = n.scalarText.flatMap(Double.init) else { problem(n, "`jitter` must be a number 0…1"); continue }
                        config.retry.jitter = x
                    default: problems.append("\(f.keyPosition): unknown key `retry.\(shown(f.key))` (known: \(retryKeys.sorted().joined(separator: ", ")))")
                    }
                }
            default:
                problems.append("\(entry.keyPosition): unknown key `\(shown(entry.key))` (known: \(knownKeys.sorted().joined(separator: ", ")))")
            }
        }
        if let (file, node) = credentialsFile {
            let full = file.hasPrefix("/") ? file : (accountDirectory as NSString).appendingPathComponent(file)
            if let refusal = credentialsRefusal(full) {
                problem(node, refusal)
            } else {
                switch readSmallFile(full, limit: maxCredentialsSize) {
                case .success(let data):
                    let first =
                        String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)?
                        .trimmingCharacters(in: .whitespaces) ?? ""
                    if first.isEmpty { problem(node, "credentials file \(full) is empty") } else { token = first }
                case .failure(let failure):
                    problem(node, "cannot read the credentials file \(full): \(failure.message)")
                }
            }
        }
        config.datacenters = dcs
        config.cdnURL = cdn
        config.mainDc = mainDc ?? dcs.keys.min() ?? 1
        config.authToken = token
        // Problems of the values as a whole point at `datacenters:` (or the top of the file).
        let anchor = entries.first { $0.key == "datacenters" }?.keyPosition ?? root.position
        problems += config.problems.map { "\(anchor): \($0)" }
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
        if st.st_mode & 0o077 != 0 {
            return "the credentials file \(path) is readable or writable by group or others (mode \(DataRoot.octal(st.st_mode & 0o7777))); `chmod 600 \(path)`"
        }
        return nil
    }

    /// Why a small file could not be read: the reason only, never its contents.
    struct ReadProblem: Error {
        var message: String
    }

    /// Reads at most `limit` bytes of the regular file at `path` (a larger file is refused).
    static func readSmallFile(_ path: String, limit: Int) -> Result<[UInt8], ReadProblem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(ReadProblem(message: StorageFailure.describe(errno: errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(ReadProblem(message: StorageFailure.describe(errno: errno))) }
        if (st.st_mode & S_IFMT) == S_IFDIR { return .failure(ReadProblem(message: "it is a directory, not a file")) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return .failure(ReadProblem(message: "it is not a regular file")) }
        guard st.st_size <= limit else { return .failure(ReadProblem(message: "it is \(st.st_size) bytes; at most \(limit) are read")) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while data.count <= limit {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(ReadProblem(message: StorageFailure.describe(errno: errno)))
            }
            if n == 0 { break }
            data += buffer[0..<n]
        }
        guard data.count <= limit else { return .failure(ReadProblem(message: "it grew past \(limit) bytes while being read")) }
        return .success(data)
    }

    /// A key as errors show it: at most 40 characters, so an error never replays a file's lines.
    static func shown(_ key: String) -> String {
        key.count <= 40 ? key : String(key.prefix(40)) + "…"
    }

    private static func seconds(_ node: ConfigNode, _ problems: inout [String]) -> Double? {
        guard let text = node.scalarText else { problems.append("\(node.position): expected \(ConfigDuration.expected)"); return nil }
        if case .scalar(_, .int) = node.value, let n = Double(text) { return n }
        if case .scalar(_, .float) = node.value, let n = Double(text) { return n }
        switch ConfigDuration.parse(text) {
        case .success(let d): return Double(ConfigDuration.milliseconds(d)) / 1000
        case .failure(let e):
            problems.append("\(node.position): \(e.message) (expected \(ConfigDuration.expected))")
            return nil
        }
    }

    private static func integer(_ node: ConfigNode, _ problems: inout [String]) -> Int? {
        guard let text = node.scalarText, let n = Int(text) else { problems.append("\(node.position): expected an integer"); return nil }
        return n
    }
}
