import CloudCore
import Foundation

/// The `objectStorage:` section of `<root>/cluster.yaml`: the S3-compatible bucket a fleet
/// shares (upload staging, the shared media tier). See `docs/object-storage.md`.
///
/// ```yaml
/// objectStorage:
///   endpoint: https://s3.eu-west-1.amazonaws.com
///   bucket: jobrun-fleet
///   region: eu-west-1
///   addressing: virtual-hosted        # or path (MinIO, Ceph RGW, IP endpoints)
///   credentialsFile: s3-credentials   # AWS shared-credentials format, mode 0600
///   prefix: jobrun/
///   partSize: 8MiB
///   sharedMedia:
///     enabled: true
///     maxSize: 200GiB
///     ttl: 30d
/// ```
///
/// `JOBRUN_S3_ENDPOINT`, `JOBRUN_S3_BUCKET`, `JOBRUN_S3_REGION`, `JOBRUN_S3_ADDRESSING`,
/// `JOBRUN_S3_CREDENTIALS_FILE` and `JOBRUN_S3_PREFIX` override the file's values (endpoint and
/// bucket from the environment alone configure a bucket). Without `credentialsFile`, the keys come
/// from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`. Other top-level keys of
/// the file belong to other sections and are not read here.
public struct ObjectStorageConfig: Sendable, Equatable {
    /// The shared media tier's settings.
    public struct SharedMedia: Sendable, Equatable {
        public var enabled: Bool = false
        /// Most bytes the tier keeps in the bucket; `nil`: no size limit.
        public var maxSize: Int64? = nil
        /// Objects unused this long are removed, in seconds; `nil`: no age limit.
        public var ttl: Double? = nil
        public init() {}
    }

    public var bucket: S3Bucket
    /// Absolute path of the credentials file; `nil`: the `AWS_*` variables.
    public var credentialsFile: String?
    /// Every object jobrun writes lives under this prefix (empty or ending in `/`).
    public var prefix: String = "jobrun/"
    /// Multipart part size (5 MiB … 5 GiB).
    public var partSize: Int64 = 8 << 20
    public var sharedMedia = SharedMedia()

    public init(bucket: S3Bucket) { self.bucket = bucket }

    /// The file's name under the data root.
    public static let fileName = "cluster.yaml"
    /// Largest `cluster.yaml` read.
    public static let maxFileSize = 1 << 20

    static let knownKeys: Set<String> = [
        "endpoint", "bucket", "region", "addressing", "credentialsFile", "prefix", "partSize", "sharedMedia",
    ]
    static let sharedMediaKeys: Set<String> = ["enabled", "maxSize", "ttl"]

    /// The configuration for `root`, or `nil` when neither `cluster.yaml`'s `objectStorage:` nor
    /// the environment names a bucket (local staging, no shared tier).
    public static func load(root: DataRoot, environment: [String: String]) throws(JobError) -> ObjectStorageConfig? {
        // `ClusterConfig` reads the file (its mode, owner and size checked once, for every section).
        let cluster = try ClusterConfig.load(root: root, environment: environment)
        let path = root.url.appendingPathComponent(fileName).path
        return try decode(
            cluster.objectStorage, anchor: cluster.objectStorage.map { "\($0.position)" } ?? "\(path):1:1", rootDirectory: root.path, environment: environment)
    }

    /// Parses the text of `cluster.yaml` (`path` names it in errors; a relative
    /// `credentialsFile` resolves against `rootDirectory`) and applies the environment.
    public static func parse(_ text: String, path: String, rootDirectory: String, environment: [String: String]) throws(JobError)
        -> ObjectStorageConfig?
    {
        let root: ConfigNode?
        do { root = try ConfigNode.parse(yaml: text, file: path) } catch {
            throw .config("invalid cluster configuration: " + error.errors.map(\.description).joined(separator: "; "))
        }
        var section: ConfigNode.Entry?
        if let root {
            guard case .mapping(let top) = root.value else {
                throw .config("invalid cluster configuration: \(root.position): the file must be a mapping of sections")
            }
            section = top.first(where: { $0.key == "objectStorage" })
        }
        return try decode(
            section?.value, anchor: section.map { "\($0.keyPosition)" } ?? "\(path):1:1", rootDirectory: rootDirectory, environment: environment)
    }

    /// Decodes the `objectStorage:` section (nil when the file has none) and applies the
    /// environment; `anchor` is where problems of the section as a whole are reported.
    static func decode(_ section: ConfigNode?, anchor: String, rootDirectory: String, environment: [String: String]) throws(JobError)
        -> ObjectStorageConfig?
    {
        var problems: [String] = []
        func problem(_ node: ConfigNode, _ message: String) { problems.append("\(node.position): \(message)") }
        var endpoint: String?
        var bucketName: String?
        var region: String?
        var addressing: S3Addressing?
        var credentialsFile: String?
        var prefix: String?
        var partSize: Int64?
        var shared = SharedMedia()

        if let section {
            guard case .mapping(let entries) = section.value else {
                throw .config("invalid cluster configuration: \(section.position): `objectStorage` must be a mapping")
            }
            for entry in entries {
                let v = entry.value
                switch entry.key {
                case "endpoint": endpoint = stringValue(v, "endpoint", &problems)
                case "bucket": bucketName = stringValue(v, "bucket", &problems)
                case "region": region = stringValue(v, "region", &problems)
                case "credentialsFile": credentialsFile = stringValue(v, "credentialsFile", &problems)
                case "prefix": prefix = v.isNull ? "" : stringValue(v, "prefix", &problems)
                case "addressing":
                    guard let word = v.scalarText, let a = S3Addressing(rawValue: word) else {
                        problem(v, "`addressing` must be one of: path, virtual-hosted")
                        continue
                    }
                    addressing = a
                case "partSize":
                    switch ByteSize.parse(v.scalarText ?? "") {
                    case .success(let n): partSize = n
                    case .failure(let e): problem(v, "partSize: \(e.message) (expected \(ByteSize.expected))")
                    }
                case "sharedMedia":
                    guard case .mapping(let fields) = v.value else {
                        problem(v, "`sharedMedia` must be a mapping")
                        continue
                    }
                    for f in fields {
                        let n = f.value
                        switch f.key {
                        case "enabled":
                            guard case .scalar(let word, .bool) = n.value else {
                                problem(n, "`sharedMedia.enabled` must be true or false")
                                continue
                            }
                            shared.enabled = ["true", "yes", "on", "y"].contains(word.lowercased())
                        case "maxSize":
                            switch ByteSize.parse(n.scalarText ?? "") {
                            case .success(let bytes): shared.maxSize = bytes
                            case .failure(let e): problem(n, "sharedMedia.maxSize: \(e.message) (expected \(ByteSize.expected))")
                            }
                        case "ttl":
                            switch ConfigDuration.parse(n.scalarText ?? "") {
                            case .success(let d): shared.ttl = Double(ConfigDuration.milliseconds(d)) / 1000
                            case .failure(let e): problem(n, "sharedMedia.ttl: \(e.message) (expected \(ConfigDuration.expected))")
                            }
                        default:
                            problems.append(
                                "\(f.keyPosition): unknown key `sharedMedia.\(AccountCloudConfig.shown(f.key))` (known: \(sharedMediaKeys.sorted().joined(separator: ", ")))"
                            )
                        }
                    }
                default:
                    problems.append(
                        "\(entry.keyPosition): unknown key `objectStorage.\(AccountCloudConfig.shown(entry.key))` (known: \(knownKeys.sorted().joined(separator: ", ")))"
                    )
                }
            }
        }

        // The environment overrides the file.
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        endpoint = env("JOBRUN_S3_ENDPOINT") ?? endpoint
        bucketName = env("JOBRUN_S3_BUCKET") ?? bucketName
        region = env("JOBRUN_S3_REGION") ?? region ?? env("AWS_REGION")
        credentialsFile = env("JOBRUN_S3_CREDENTIALS_FILE") ?? credentialsFile
        prefix = env("JOBRUN_S3_PREFIX") ?? prefix
        if let word = env("JOBRUN_S3_ADDRESSING") {
            guard let a = S3Addressing(rawValue: word) else {
                throw .config("JOBRUN_S3_ADDRESSING must be one of: path, virtual-hosted (got \(AccountCloudConfig.shown(word)))")
            }
            addressing = a
        }

        if !problems.isEmpty { throw .config("invalid cluster configuration: " + problems.joined(separator: "; ")) }
        if endpoint == nil && bucketName == nil { return nil }
        guard let endpoint else {
            throw .config("invalid cluster configuration: \(anchor): objectStorage needs `endpoint` (or JOBRUN_S3_ENDPOINT)")
        }
        guard let bucketName else {
            throw .config("invalid cluster configuration: \(anchor): objectStorage needs `bucket` (or JOBRUN_S3_BUCKET)")
        }
        var config = ObjectStorageConfig(
            bucket: S3Bucket(endpoint: endpoint, name: bucketName, region: region ?? "us-east-1", addressing: addressing ?? .path))
        if let credentialsFile {
            config.credentialsFile =
                credentialsFile.hasPrefix("/") ? credentialsFile : (rootDirectory as NSString).appendingPathComponent(credentialsFile)
        }
        if var prefix {
            while prefix.hasPrefix("/") { prefix.removeFirst() }
            if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
            config.prefix = prefix
        }
        if let partSize { config.partSize = partSize }
        config.sharedMedia = shared
        let whole = config.problems
        if !whole.isEmpty { throw .config("invalid cluster configuration: \(anchor): " + whole.joined(separator: "; ")) }
        return config
    }

    /// Problems with the values as a whole, as sentences.
    public var problems: [String] {
        var out = bucket.problems
        if partSize < 5 << 20 || partSize > 5 << 30 { out.append("partSize must be 5MiB…5GiB (got \(ByteSize.format(partSize)))") }
        if let m = sharedMedia.maxSize, m <= 0 { out.append("sharedMedia.maxSize must be above 0") }
        if let t = sharedMedia.ttl, t <= 0 { out.append("sharedMedia.ttl must be above 0") }
        if prefix.contains("//") || prefix.contains("..") { out.append("prefix must not contain '//' or '..' (got \(prefix))") }
        return out
    }

    /// The keys that sign requests: from ``credentialsFile`` (0600, owned by the user running
    /// jobrun) or else the `AWS_*` variables. Errors name the file or the variable, never a value.
    public func credentials(environment: [String: String]) throws(JobError) -> S3Credentials {
        do {
            if let credentialsFile {
                if let refusal = AccountCloudConfig.credentialsRefusal(credentialsFile) { throw JobError.config(refusal) }
                return try S3Credentials.load(file: credentialsFile)
            }
            guard let fromEnvironment = try S3Credentials.fromEnvironment(environment) else { throw S3CredentialsError.none }
            return fromEnvironment
        } catch let error as JobError {
            throw error
        } catch {
            throw .config("\(error)")
        }
    }

    /// A client for the bucket over `transport`, retrying like the cloud client.
    public func client(transport: any Transport, environment: [String: String], retry: CloudRetryPolicy = CloudRetryPolicy())
        throws(JobError) -> S3Client
    {
        S3Client(transport: transport, bucket: bucket, credentials: try credentials(environment: environment), retryPolicy: retry)
    }

    private static func stringValue(_ node: ConfigNode, _ name: String, _ problems: inout [String]) -> String? {
        guard case .scalar(let s, let type) = node.value, type != .null, !s.isEmpty else {
            problems.append("\(node.position): `\(name)` must be a non-empty string, not \(node.typeName)")
            return nil
        }
        return s
    }
}
