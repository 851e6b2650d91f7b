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
/// The keys, their defaults and their `JOBRUN_S3_*` variables are `ObjectStorageSection`'s
/// (endpoint and bucket from the environment alone configure a bucket). Without
/// `credentialsFile`, the keys come from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
/// `AWS_SESSION_TOKEN`.
public struct ObjectStorageConfig: Sendable, Equatable {
    /// The shared media tier's settings.
    public struct SharedMedia: Sendable, Equatable {
        public var enabled: Bool
        /// Most bytes the tier keeps in the bucket; `nil`: no size limit.
        public var maxSize: Int64?
        /// Objects unused this long are removed, in seconds; `nil`: no age limit.
        public var ttl: Double?
        public init(enabled: Bool, maxSize: Int64?, ttl: Double?) {
            self.enabled = enabled
            self.maxSize = maxSize
            self.ttl = ttl
        }
    }

    public var bucket: S3Bucket
    /// Absolute path of the credentials file; `nil`: the `AWS_*` variables.
    public var credentialsFile: String?
    /// Every object jobrun writes lives under this prefix (empty or ending in `/`).
    public var prefix: String
    /// Multipart part size (5 MiB … 5 GiB).
    public var partSize: Int64
    public var sharedMedia: SharedMedia

    /// The configuration for `root`, or `nil` when neither `cluster.yaml`'s `objectStorage:` nor
    /// the environment names a bucket (local staging, no shared tier).
    public static func load(root: DataRoot, environment: [String: String]) throws(JobError) -> ObjectStorageConfig? {
        try ClusterConfig.load(root: root, environment: environment).objectStorage
    }

    /// Parses the text of `cluster.yaml` (`path` names it in errors; a relative
    /// `credentialsFile` resolves against `rootDirectory`) and applies the environment.
    public static func parse(_ text: String, path: String, rootDirectory: String, environment: [String: String]) throws(JobError)
        -> ObjectStorageConfig?
    {
        try ClusterConfig.parse(text, path: path, rootDirectory: rootDirectory, environment: environment).objectStorage
    }

    /// The validated `objectStorage:` section; nil when it names no bucket.
    init?(_ values: JobParams, rootDirectory: String, environment: [String: String]) throws(JobFileErrors) {
        typealias Section = ObjectStorageSection
        guard let endpoint = values[Section.endpoint], let name = values[Section.bucket] else { return nil }
        let region = values[Section.region] ?? environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        bucket = S3Bucket(endpoint: endpoint, name: name, region: region, addressing: values[Section.addressing])
        if let file = values[Section.credentialsFile] {
            credentialsFile = file.hasPrefix("/") ? file : (rootDirectory as NSString).appendingPathComponent(file)
        }
        var prefix = values[Section.prefix]
        while prefix.hasPrefix("/") { prefix.removeFirst() }
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        self.prefix = prefix
        partSize = values[Section.partSize].bytes
        let shared = values[Section.sharedMedia]
        sharedMedia = SharedMedia(
            enabled: shared[SharedMediaSection.enabled], maxSize: shared[SharedMediaSection.maxSize]?.bytes,
            ttl: shared[SharedMediaSection.ttl]?.jobSeconds)
        let problems = bucket.problems
        if !problems.isEmpty { throw JobFileErrors(problems.map { JobFileError(values.fallback, "objectStorage: " + $0) }) }
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
}
