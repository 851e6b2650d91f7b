import CloudCore
import Foundation

/// Decodes the entries of an account's `config.yaml` one key at a time into a
/// `CloudAccountConfig`, collecting every problem as `file:line:column: message` instead of
/// stopping at the first. `AccountCloudConfig.parse` drives it; the token is never part of a
/// problem.
struct CloudConfigDecoder {
    var config = CloudAccountConfig(datacenters: [:])
    var mainDc: Int?
    var problems: [String] = []
    private var credentialsFile: (path: String, node: ConfigNode)?

    private mutating func problem(_ node: ConfigNode, _ message: String) { problems.append("\(node.position): \(message)") }

    mutating func decode(_ entry: ConfigNode.Entry) {
        let v = entry.value
        switch entry.key {
        case "datacenters": config.datacenters = datacenters(v)
        case "cdn": config.cdnURL = cdn(v)
        case "mainDc":
            guard let n = v.scalarText.flatMap({ Int($0) }) else { return problem(v, "`mainDc` must be a DC id") }
            mainDc = n
        case "authToken": authToken(v)
        case "credentialsFile":
            guard let s = v.scalarText, !s.isEmpty else { return problem(v, "`credentialsFile` must be a path") }
            credentialsFile = (s, v)
        case "requestTimeout": if let d = seconds(v) { config.requestTimeout = d }
        case "referenceTTL": if let d = seconds(v) { config.referenceTTL = d }
        case "connectTimeout": if let d = seconds(v) { config.connectTimeout = d }
        case "maxAnswerSize":
            switch ByteSize.parse(v.scalarText ?? "") {
            case .success(let n): config.maxAnswerSize = Int(clamping: n)
            case .failure(let e): problem(v, "maxAnswerSize: \(e.message)")
            }
        case "retry": retry(v)
        default:
            problems.append(
                "\(entry.keyPosition): unknown key `\(AccountCloudConfig.shown(entry.key))` (known: \(AccountCloudConfig.knownKeys.sorted().joined(separator: ", ")))"
            )
        }
    }

    /// DC id → URL, as a mapping or as the list `cloudd` prints (`[{id: 1, url: …}, …]`).
    private mutating func datacenters(_ v: ConfigNode) -> [Int: String] {
        var dcs: [Int: String] = [:]
        switch v.value {
        case .mapping(let items):
            for item in items {
                guard let id = Int(item.key) else { problem(v, "datacenter key `\(item.key)` must be a DC id (1, 2, …)"); continue }
                guard let url = item.value.scalarText else { problem(item.value, "datacenter \(id) needs a URL"); continue }
                dcs[id] = url
            }
        case .sequence(let items):
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
        return dcs
    }

    /// A URL, or `{id: …, url: …}` as `cloudd` prints it.
    private func cdn(_ v: ConfigNode) -> String? {
        if case .mapping(let fields) = v.value { return fields.first(where: { $0.key == "url" })?.value.scalarText }
        return v.isNull ? nil : v.scalarText
    }

    private mutating func authToken(_ v: ConfigNode) {
        switch v.value {
        case .scalar(let text, let type) where type != .null && !text.isEmpty: config.authToken = text
        case .scalar: problem(v, "`authToken` is empty; give the token, or remove the key (better: `credentialsFile`)")
        default: problem(v, "`authToken` must be a string, not \(v.typeName) (its value is not shown)")
        }
    }

    private mutating func retry(_ v: ConfigNode) {
        guard case .mapping(let fields) = v.value else { return problem(v, "`retry` must be a mapping") }
        for f in fields {
            let n = f.value
            switch f.key {
            case "maxAttempts": if let i = integer(n) { config.retry.maxAttempts = i }
            case "maxFloodWaits": if let i = integer(n) { config.retry.maxFloodWaits = i }
            case "maxMigrations": if let i = integer(n) { config.retry.maxMigrations = i }
            case "baseDelay": if let d = seconds(n) { config.retry.baseDelay = d }
            case "maxDelay": if let d = seconds(n) { config.retry.maxDelay = d }
            case "maxFloodWait": if let d = seconds(n) { config.retry.maxFloodWait = d }
            case "jitter":
                guard let x = n.scalarText.flatMap(Double.init) else { problem(n, "`jitter` must be a number 0…1"); continue }
                config.retry.jitter = x
            default:
                problems.append(
                    "\(f.keyPosition): unknown key `retry.\(AccountCloudConfig.shown(f.key))` (known: \(AccountCloudConfig.retryKeys.sorted().joined(separator: ", ")))"
                )
            }
        }
    }

    /// Reads the token from `credentialsFile` (its first line), refusing a file others may read.
    mutating func readCredentials(accountDirectory: String) {
        guard let (file, node) = credentialsFile else { return }
        let full = file.hasPrefix("/") ? file : (accountDirectory as NSString).appendingPathComponent(file)
        if let refusal = AccountCloudConfig.credentialsRefusal(full) { return problem(node, refusal) }
        switch SmallFile.read(full, limit: AccountCloudConfig.maxCredentialsSize) {
        case .success(let data):
            let first =
                String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            if first.isEmpty { problem(node, "credentials file \(full) is empty") } else { config.authToken = first }
        case .failure(let failure):
            problem(node, "cannot read the credentials file \(full): \(failure.message)")
        }
    }

    private mutating func seconds(_ node: ConfigNode) -> Double? {
        guard let text = node.scalarText else { problem(node, "expected \(ConfigDuration.expected)"); return nil }
        if case .scalar(_, .int) = node.value, let n = Double(text) { return n }
        if case .scalar(_, .float) = node.value, let n = Double(text) { return n }
        switch ConfigDuration.parse(text) {
        case .success(let d): return Double(ConfigDuration.milliseconds(d)) / 1000
        case .failure(let e):
            problem(node, "\(e.message) (expected \(ConfigDuration.expected))")
            return nil
        }
    }

    private mutating func integer(_ node: ConfigNode) -> Int? {
        guard let text = node.scalarText, let n = Int(text) else { problem(node, "expected an integer"); return nil }
        return n
    }
}
