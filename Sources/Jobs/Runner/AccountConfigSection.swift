import CloudCore

/// An account's `config.yaml` (`docs/account-config.md`): where each datacenter is, the
/// credentials, timeouts and retries. The defaults are the cloud client's own.
public enum AccountConfigSection: ConfigSection {
    public static let path = ""
    static let client = CloudAccountConfig(datacenters: [:])

    public static let datacenters = Param<DatacenterURLs>.required(
        "datacenters", doc: "DC id → base URL (http or https), or the list `cloudd` prints (`[{id: 1, url: …}]`)")
    public static let cdn = OptionalParam<CDNAddress>("cdn", doc: "the CDN's base URL, or `{id: …, url: …}` (CDN redirects carry it anyway)")
    public static let mainDc = OptionalParam<Int>(
        "mainDc", range: .init(CloudAccountConfig.datacenterIdRange), doc: "DC for chat list, history, entities and uploads (default: the lowest id)")
    public static let credentialsFile = OptionalParam<String>(
        "credentialsFile", doc: "file whose first line is the auth token, relative to `account-<id>/` (0600, this user's)")
    public static let authToken = OptionalParam<SecretText>(
        "authToken", doc: "the auth token itself: prefer `credentialsFile`; never shown in any message")
    public static let requestTimeout = Param<Duration>(
        "requestTimeout", default: seconds(client.requestTimeout), range: CloudAccountConfig.requestTimeoutRange,
        doc: "time allowed for one whole HTTP exchange"
    ).acceptingBareSeconds()
    public static let connectTimeout = Param<Duration>(
        "connectTimeout", default: seconds(client.connectTimeout), range: CloudAccountConfig.connectTimeoutRange, doc: "time allowed to connect (TCP and TLS)"
    ).acceptingBareSeconds()
    public static let maxAnswerSize = Param<ByteCount>(
        "maxAnswerSize", default: ByteCount(Int64(client.maxAnswerSize)), range: .init(CloudAccountConfig.maxAnswerSizeRange),
        doc: "larger JSON answers are refused as bad answers")
    public static let referenceTTL = Param<Duration>(
        "referenceTTL", default: seconds(client.referenceTTL), range: CloudAccountConfig.referenceTTLRange,
        doc: "how long a file reference lives (cloudd's `--reference-ttl`)"
    ).acceptingBareSeconds()
    public static let retry = SectionParam<AccountRetrySection>("retry", doc: "how a call is retried")

    public static let parameters: [any JobParameter] = [
        datacenters, cdn, mainDc, credentialsFile, authToken, requestTimeout, connectTimeout, maxAnswerSize, referenceTTL, retry,
    ]

    public static func check(_ values: JobParams) -> [JobFileError] {
        // Written without a value, the token must not silently be dropped: the job would run
        // unauthenticated.
        if values.positions[authToken.spec.name] != nil && values[authToken] == nil {
            return [values.error(authToken, "`authToken` is empty; give the token, or remove the key (better: `credentialsFile`)")]
        }
        return []
    }

    static func seconds(_ value: Double) -> Duration { .milliseconds(Int64((value * 1000).rounded())) }
}

/// `config.yaml`'s `retry:`.
public enum AccountRetrySection: ConfigSection {
    public static let path = "retry"
    static var client: CloudRetryPolicy { AccountConfigSection.client.retry }

    public static let maxAttempts = Param<Int>(
        "maxAttempts", default: client.maxAttempts, range: .init(CloudRetryPolicy.maxAttemptsRange),
        doc: "tries per call for transport failures and 5xx (the first included)")
    public static let baseDelay = Param<Duration>(
        "baseDelay", default: AccountConfigSection.seconds(client.baseDelay), range: CloudRetryPolicy.baseDelayRange,
        doc: "the first backoff; it doubles per retry"
    ).acceptingBareSeconds()
    public static let maxDelay = Param<Duration>(
        "maxDelay", default: AccountConfigSection.seconds(client.maxDelay), range: CloudRetryPolicy.maxDelayRange, doc: "the longest backoff"
    ).acceptingBareSeconds()
    public static let jitter = Param<Double>("jitter", default: client.jitter, range: CloudRetryPolicy.jitterRange, doc: "share of each wait that is random")
    public static let maxFloodWait = Param<Duration>(
        "maxFloodWait", default: AccountConfigSection.seconds(client.maxFloodWait), range: CloudRetryPolicy.maxFloodWaitRange,
        doc: "a FLOOD_WAIT longer than this fails the call at once"
    ).acceptingBareSeconds()
    public static let maxFloodWaits = Param<Int>(
        "maxFloodWaits", default: client.maxFloodWaits, range: .init(CloudRetryPolicy.maxFloodWaitsRange), doc: "FLOOD_WAITs honoured per call")
    public static let maxMigrations = Param<Int>(
        "maxMigrations", default: client.maxMigrations, range: .init(CloudRetryPolicy.maxMigrationsRange), doc: "FILE_MIGRATE answers followed per call")

    public static let parameters: [any JobParameter] = [maxAttempts, baseDelay, maxDelay, jitter, maxFloodWait, maxFloodWaits, maxMigrations]

    public static func check(_ values: JobParams) -> [JobFileError] {
        guard values[maxDelay] < values[baseDelay] else { return [] }
        return [values.error(maxDelay, "retry.maxDelay is shorter than retry.baseDelay", expected: "maxDelay ≥ baseDelay")]
    }
}

/// `datacenters:`: DC id → URL, as a mapping or as the list `cloudd` prints.
public struct DatacenterURLs: ParamConvertible {
    public var urls: [Int: String]

    public static let paramType = ParamType.custom(
        CustomParamType(name: "datacenters", description: "a mapping of DC id to URL, or a list of {id, url}") { node, name, errors in
            var urls: [String: ParamValue] = [:]
            func add(_ id: Int?, _ url: ConfigNode?, at position: SourcePosition) {
                let ids = CloudAccountConfig.datacenterIdRange
                guard let id, ids.contains(id) else {
                    errors.append(JobFileError(position, "'\(name)': a DC id is a number from \(ids.lowerBound) to \(ids.upperBound)", expected: "1, 2, …"))
                    return
                }
                guard let url, case .scalar(let text, let type) = url.value, type == .string, !text.isEmpty else {
                    errors.append(JobFileError(url?.position ?? position, "'\(name)': datacenter \(id) needs a URL", expected: "http://host:port"))
                    return
                }
                urls[String(id)] = .string(text)
            }
            switch node.value {
            case .mapping(let entries):
                for entry in entries { add(Int(entry.key), entry.value, at: entry.keyPosition) }
            case .sequence(let items):
                for item in items {
                    guard case .mapping(let fields) = item.value else {
                        errors.append(JobFileError(item.position, "'\(name)': each datacenter is {id: …, url: …}", expected: "{id: 1, url: http://…}"))
                        continue
                    }
                    var id: ConfigNode?
                    var url: ConfigNode?
                    for field in fields {
                        switch field.key {
                        case "id": id = field.value
                        case "url": url = field.value
                        default:
                            errors.append(
                                JobFileError(field.keyPosition, "unknown key \(ConfigNode.quotedKey(field.key)) in a datacenter", expected: "id, url"))
                        }
                    }
                    add(id?.scalarText.flatMap { Int($0) }, url, at: id?.position ?? item.position)
                }
            default:
                errors.append(JobFileError(node.position, "'\(name)' has the wrong type: found \(node.typeName)", expected: "a mapping of DC id to URL"))
                return nil
            }
            return .map(urls)
        })

    public init?(paramValue: ParamValue) {
        guard case .map(let items) = paramValue else { return nil }
        var urls: [Int: String] = [:]
        for (id, value) in items {
            guard let id = Int(id), case .string(let url) = value else { return nil }
            urls[id] = url
        }
        self.urls = urls
    }

    public var paramValue: ParamValue { .map(Dictionary(uniqueKeysWithValues: urls.map { (String($0.key), ParamValue.string($0.value)) })) }
}

/// `cdn:`: a URL, or `{id: …, url: …}` as `cloudd` prints it.
public struct CDNAddress: ParamConvertible {
    public var url: String

    public static let paramType = ParamType.custom(
        CustomParamType(name: "URL", description: "a URL, or {id: …, url: …}") { node, name, errors in
            switch node.value {
            case .scalar(let text, .string): return .string(text)
            case .mapping(let fields):
                if let url = fields.first(where: { $0.key == "url" })?.value, case .scalar(let text, .string) = url.value { return .string(text) }
            default: break
            }
            errors.append(JobFileError(node.position, "'\(name)' must be a URL or {id: …, url: …}", expected: "http://host:port"))
            return nil
        })

    public init?(paramValue: ParamValue) {
        guard case .string(let url) = paramValue else { return nil }
        self.url = url
    }
    public var paramValue: ParamValue { .string(url) }
}

/// A secret written in a file (a token): any non-empty plain value, never shown in a message.
public struct SecretText: ParamConvertible {
    public var text: String

    public static let paramType = ParamType.custom(
        CustomParamType(name: "secret", description: "a non-empty string (never shown)") { node, name, errors in
            guard case .scalar(let text, let type) = node.value, type != .null else {
                errors.append(JobFileError(node.position, "'\(name)' must be a string, not \(node.typeName) (its value is not shown)", expected: "a string"))
                return nil
            }
            guard !text.isEmpty, !text.contains(where: \.isNewline) else {
                errors.append(JobFileError(node.position, "'\(name)' must be one non-empty line (its value is not shown)", expected: "a token"))
                return nil
            }
            return .string(text)
        })

    public init?(paramValue: ParamValue) {
        guard case .string(let text) = paramValue else { return nil }
        self.text = text
    }
    public var paramValue: ParamValue { .string(text) }
}
