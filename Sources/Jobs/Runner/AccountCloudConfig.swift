import CloudCore
import Foundation

/// Reads an account's `config.yaml` (`docs/account-config.md`) into a `CloudAccountConfig`.
///
/// Every problem is a `JobError.config` (exit 78) naming the file, with `line:column` where the
/// YAML has one; a missing file names the path and what to put in it. The auth token comes from
/// `credentialsFile` (preferred: keeps the secret out of the config) or `authToken`, and is never
/// part of any message.
public enum AccountCloudConfig {
    /// Keys the file may have.
    static let knownKeys: Set<String> = ["datacenters", "cdn", "mainDc", "authToken", "credentialsFile",
                                         "requestTimeout", "connectTimeout", "maxAnswerSize", "retry", "referenceTTL"]
    static let retryKeys: Set<String> = ["maxAttempts", "baseDelay", "maxDelay", "jitter", "maxFloodWait", "maxFloodWaits", "maxMigrations"]

    /// Loads `paths.config`.
    public static func load(_ paths: AccountPaths) throws(JobError) -> CloudAccountConfig {
        let path = paths.config.path
        guard FileManager.default.fileExists(atPath: path) else {
            throw .config("no cloud configuration at \(path): create it with the datacenter URLs (see docs/account-config.md), e.g.\n  datacenters:\n    1: http://127.0.0.1:40000")
        }
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw .config("cannot read \(path): \(error.localizedDescription)")
        }
        return try parse(text, path: path, accountDirectory: paths.directory.path)
    }

    /// Parses config text; `path` names the file in errors, relative credential paths resolve
    /// against `accountDirectory`.
    public static func parse(_ text: String, path: String, accountDirectory: String) throws(JobError) -> CloudAccountConfig {
        let root: ConfigNode?
        do { root = try ConfigNode.parse(yaml: text, file: path) } catch {
            throw .config("invalid cloud configuration: \(error.description)")
        }
        guard let root, case .mapping(let entries) = root.value else {
            throw .config("\(path): the cloud configuration must be a mapping with at least `datacenters:`")
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
                              let url = fields.first(where: { $0.key == "url" })?.value.scalarText else {
                            problem(item, "each datacenter needs `id` and `url`"); continue
                        }
                        dcs[id] = url
                    }
                default: problem(v, "`datacenters` must map DC ids to URLs")
                }
            case "cdn":
                if case .mapping(let fields) = v.value { cdn = fields.first(where: { $0.key == "url" })?.value.scalarText }
                else { cdn = v.isNull ? nil : v.scalarText }
            case "mainDc":
                guard let n = v.scalarText.flatMap({ Int($0) }) else { problem(v, "`mainDc` must be a DC id"); continue }
                mainDc = n
            case "authToken":
                token = v.scalarText
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
                    default: problems.append("\(f.keyPosition): unknown key `retry.\(f.key)` (known: \(retryKeys.sorted().joined(separator: ", ")))")
                    }
                }
            default:
                problems.append("\(entry.keyPosition): unknown key `\(entry.key)` (known: \(knownKeys.sorted().joined(separator: ", ")))")
            }
        }
        if let (file, node) = credentialsFile {
            let full = file.hasPrefix("/") ? file : (accountDirectory as NSString).appendingPathComponent(file)
            if let data = FileManager.default.contents(atPath: full) {
                let first = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)?
                    .trimmingCharacters(in: .whitespaces) ?? ""
                if first.isEmpty { problem(node, "credentials file \(full) is empty") } else { token = first }
            } else {
                problem(node, "cannot read the credentials file \(full)")
            }
        }
        config.datacenters = dcs
        config.cdnURL = cdn
        config.mainDc = mainDc ?? dcs.keys.min() ?? 1
        config.authToken = token
        problems += config.problems.map { "\(path): \($0)" }
        if !problems.isEmpty { throw .config("invalid cloud configuration: " + problems.joined(separator: "; ")) }
        return config
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
