import CloudCore
import Foundation

/// `<root>/cluster.yaml`: what this host shares with the other hosts of a fleet
/// (`docs/scale-out.md`). Without the file (and without `JOBRUN_POSTGRES_*` variables) nothing
/// is shared: Postbox stays on SQLite under the root.
///
/// The file may hold credentials' locations, so like a private key it must not be readable by
/// others, nor by a group that is not this process's own (`CredentialFileMode`), and no error
/// ever shows a value from it. Its sections are declared in `ClusterSections.swift` and decoded
/// by the one configuration decoder.
public struct ClusterConfig: Sendable {
    /// The file's name under the data root.
    public static let fileName = "cluster.yaml"
    /// Largest file read.
    static let maxSize = 256 << 10

    /// Where Postbox lives when it is shared: nil keeps SQLite.
    public var postgres: PostgresClusterConfig?
    /// The bucket the fleet shares: nil stages uploads locally, with no shared media tier.
    public var objectStorage: ObjectStorageConfig?

    public init(postgres: PostgresClusterConfig? = nil, objectStorage: ObjectStorageConfig? = nil) {
        self.postgres = postgres
        self.objectStorage = objectStorage
    }

    /// Whether the stores are shared between hosts.
    public var isShared: Bool { postgres != nil }

    /// Reads `<root>/cluster.yaml` (if present) with the `JOBRUN_POSTGRES_*` and `JOBRUN_S3_*`
    /// variables over it. Every problem is a `JobError.config` (exit 78) naming the file and line.
    public static func load(
        root: DataRoot, environment: [String: String] = LaunchEnvironment.variables
    ) throws(JobError) -> ClusterConfig {
        let path = root.url.appendingPathComponent(fileName).path
        let shown = ShownText.escaped(path)
        var text = ""
        var st = stat()
        if stat(path, &st) == 0 {
            if let problem = CredentialFileMode.problem(mode: st.st_mode, group: st.st_gid) {
                throw .config("the cluster configuration \(shown): \(problem); it names credentials: \(CredentialFileMode.fix(shown))")
            }
            if st.st_uid != geteuid() && st.st_uid != 0 {
                throw .config(
                    "the cluster configuration \(shown) is owned by \(DataRoot.userName(st.st_uid)), not by \(DataRoot.userName(geteuid())) who runs jobrun")
            }
            do { text = try ConfigFile.text(at: path, limit: maxSize, what: "cluster configuration") } catch {
                throw .config("invalid cluster configuration: \(error)")
            }
        } else if errno != ENOENT {
            throw .config("cannot read the cluster configuration \(shown): \(StorageFailure.describe(errno: errno))")
        }
        return try parse(text, path: path, rootDirectory: root.path, environment: environment)
    }

    /// Parses the file's text with `environment`'s variables over it; `path` names it in errors,
    /// relative paths in it resolve against `rootDirectory`.
    public static func parse(
        _ text: String, path: String, rootDirectory: String, environment: [String: String] = [:]
    ) throws(JobError) -> ClusterConfig {
        do { return try decode(text, path: path, rootDirectory: rootDirectory, environment: environment) } catch {
            throw .config("invalid cluster configuration: \(error)")
        }
    }

    private static func decode(
        _ text: String, path: String, rootDirectory: String, environment: [String: String]
    ) throws(JobFileErrors) -> ClusterConfig {
        let origin = SourcePosition(file: path, line: 1, column: 1)
        let root = try ConfigNode.parse(yaml: text, file: path)
        if let root, !root.isNull {
            guard case .mapping = root.value else {
                throw JobFileErrors([
                    JobFileError(root.position, "the file must be a mapping of sections", expected: "postgres:, objectStorage:")
                ])
            }
        }
        let (values, errors) = ClusterFileSection.validate(root, fallback: origin, environment: environment)
        if !errors.isEmpty { throw JobFileErrors(errors) }
        var config = ClusterConfig()
        if let postgres = values.section(ClusterFileSection.postgres) {
            config.postgres = PostgresClusterConfig(postgres, rootDirectory: rootDirectory)
        }
        if let storage = values.section(ClusterFileSection.objectStorage) {
            config.objectStorage = try ObjectStorageConfig(storage, rootDirectory: rootDirectory, environment: environment)
        }
        return config
    }
}
