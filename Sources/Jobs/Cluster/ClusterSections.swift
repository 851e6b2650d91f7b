import CloudCore

/// `<root>/cluster.yaml`'s top level: one optional section per shared service.
public enum ClusterFileSection: ConfigSection {
    public static let path = ""

    public static let postgres = SectionParam<PostgresSection>.optional(
        "postgres", doc: "the PostgreSQL server every host's Postbox lives on (absent: SQLite under the root)")
    public static let objectStorage = SectionParam<ObjectStorageSection>.optional(
        "objectStorage", doc: "the S3-compatible bucket the fleet shares (absent: local staging, no shared tier)")

    public static let parameters: [any JobParameter] = [postgres, objectStorage]
}

/// `cluster.yaml`'s `postgres:` (`docs/scale-out.md`).
public enum PostgresSection: ConfigSection {
    public static let path = "postgres"

    public static let url = Param<String>.required(
        "url", environment: "JOBRUN_POSTGRES_URL",
        doc: "postgresql://user@host:port/database, or a socket folder as `?host=/run/postgresql`; no password")
    public static let passwordFile = OptionalParam<String>(
        "passwordFile", environment: "JOBRUN_POSTGRES_PASSWORD_FILE", doc: "file whose first line is the password (0600, this user's)")
    public static let tls = SectionParam<PostgresTLSSection>("tls", doc: "TLS to the server: a mode, or `{mode: …, caFile: …}`")
    public static let schemaPrefix = Param<String>(
        "schemaPrefix", default: "jobrun", environment: "JOBRUN_POSTGRES_SCHEMA_PREFIX",
        doc: "account `<id>`'s Postbox lives in schema `<schemaPrefix>_account_<id>`")
    public static let lease = Param<Duration>(
        "lease", default: .seconds(30), range: 2...3600,
        doc: "how long a scheduler holds a claimed work item without renewing it: the bound after which another host takes over"
    ).formerly("leaseSeconds")
    public static let maxOpenStores = Param<Int>(
        "maxOpenStores", default: 16, range: 1...10_000, environment: "JOBRUN_POSTGRES_MAX_OPEN_STORES",
        doc: "most account stores a process keeps open, one server connection each: idle ones beyond it are closed, least recently used first "
            + "(stores in use by running jobs stay open); keep hosts × this under the server's max_connections")

    public static let parameters: [any JobParameter] = [url, passwordFile, tls, schemaPrefix, lease, maxOpenStores]

    public static func check(_ values: JobParams) -> [JobFileError] {
        var errors: [JobFileError] = []
        if case .failure(let problem) = PostgresClusterConfig.parseURL(values[url]) { errors.append(values.error(url, problem.message)) }
        if !PostgresClusterConfig.validPrefix(values[schemaPrefix]) {
            errors.append(values.error(schemaPrefix, "`postgres.schemaPrefix` must be 1–30 lower-case letters, digits and _, starting with a letter"))
        }
        return errors
    }
}

/// `cluster.yaml`'s `postgres.tls:`.
public enum PostgresTLSSection: ConfigSection {
    public static let path = "postgres.tls"

    public static let mode = Param<PostgresClusterConfig.TLS>(
        "mode", default: .disable, environment: "JOBRUN_POSTGRES_TLS_MODE", doc: "disable, require, or verify-full (which needs caFile)")
    public static let caFile = OptionalParam<String>(
        "caFile", environment: "JOBRUN_POSTGRES_CA_FILE", doc: "the CA certificate verify-full checks the server against")

    public static let parameters: [any JobParameter] = [mode, caFile]
    public static var shorthand: (any JobParameter)? { mode }

    public static func check(_ values: JobParams) -> [JobFileError] {
        guard values[mode] == .verifyFull && values[caFile] == nil else { return [] }
        return [values.error(mode, "`postgres.tls` mode verify-full needs `caFile`", expected: "caFile: /path/to/ca.pem")]
    }
}

/// `cluster.yaml`'s `objectStorage:` (`docs/object-storage.md`).
public enum ObjectStorageSection: ConfigSection {
    public static let path = "objectStorage"

    public static let endpoint = OptionalParam<String>("endpoint", environment: "JOBRUN_S3_ENDPOINT", doc: "the S3 endpoint's URL")
    public static let bucket = OptionalParam<String>("bucket", environment: "JOBRUN_S3_BUCKET", doc: "the bucket's name")
    public static let region = OptionalParam<String>(
        "region", environment: "JOBRUN_S3_REGION", doc: "the region requests are signed for (default: $AWS_REGION, else us-east-1)")
    public static let addressing = Param<S3Addressing>(
        "addressing", default: .path, environment: "JOBRUN_S3_ADDRESSING", doc: "path (MinIO, Ceph RGW, IP endpoints) or virtual-hosted (AWS)")
    public static let credentialsFile = OptionalParam<String>(
        "credentialsFile", environment: "JOBRUN_S3_CREDENTIALS_FILE",
        doc: "AWS shared-credentials file, mode 0600 (default: the AWS_* variables)")
    public static let prefix = Param<String>(
        "prefix", default: "jobrun/", environment: "JOBRUN_S3_PREFIX", doc: "every object jobrun writes lives under this prefix")
    public static let partSize = Param<ByteCount>(
        "partSize", default: ByteCount(S3FileUpload.defaultPartSize), range: .init(S3FileUpload.partSizeRange), doc: "multipart upload part size")
    public static let sharedMedia = SectionParam<SharedMediaSection>("sharedMedia", doc: "the shared media tier")

    public static let parameters: [any JobParameter] = [endpoint, bucket, region, addressing, credentialsFile, prefix, partSize, sharedMedia]

    public static func check(_ values: JobParams) -> [JobFileError] {
        let text = values[prefix]
        if text.contains("//") || text.contains("..") {
            return [values.error(prefix, "objectStorage.prefix must not contain '//' or '..'", expected: "a prefix such as jobrun/")]
        }
        switch (values[endpoint], values[bucket]) {
        case (nil, nil), (_?, _?): return []
        case (nil, _?): return [JobFileError(values.fallback, "objectStorage needs `endpoint` (or $JOBRUN_S3_ENDPOINT)", expected: "endpoint: https://…")]
        case (_?, nil): return [JobFileError(values.fallback, "objectStorage needs `bucket` (or $JOBRUN_S3_BUCKET)", expected: "bucket: name")]
        }
    }
}

/// `cluster.yaml`'s `objectStorage.sharedMedia:`.
public enum SharedMediaSection: ConfigSection {
    public static let path = "objectStorage.sharedMedia"

    public static let enabled = Param<Bool>("enabled", default: false, doc: "whether hosts share media through the bucket")
    public static let maxSize = OptionalParam<ByteCount>("maxSize", range: 1...1e18, doc: "most bytes the tier keeps in the bucket (default: no limit)")
    public static let ttl = OptionalParam<Duration>(
        "ttl", range: 1...(36_500 * 86_400), doc: "objects unused this long are removed (default: no age limit)")

    public static let parameters: [any JobParameter] = [enabled, maxSize, ttl]
}

extension PostgresClusterConfig.TLS: ParamWord {
    public var word: String { rawValue }
}

extension S3Addressing: ParamWord {
    public var word: String { rawValue }
}
