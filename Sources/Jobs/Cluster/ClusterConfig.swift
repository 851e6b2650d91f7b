import CloudCore
import Foundation

/// `<root>/cluster.yaml`: what this host shares with the other hosts of a fleet
/// (`docs/scale-out.md`). Without the file (and without `JOBRUN_POSTGRES_*` variables) nothing
/// is shared: Postbox stays on SQLite under the root.
///
/// The file may hold credentials' locations, so like a private key it must not be readable by
/// others, nor by a group that is not this process's own (`CredentialFileMode`), and no error
/// ever shows a value from it. Each section is read by its own
/// owner: `postgres:` here (`PostgresClusterConfig`), `objectStorage:` by the object storage
/// client, which receives the raw node.
public struct ClusterConfig: Sendable {
    /// The file's name under the data root.
    public static let fileName = "cluster.yaml"
    /// Largest file read.
    static let maxSize = 256 << 10
    static let knownKeys: Set<String> = ["postgres", "objectStorage"]

    /// Where Postbox lives when it is shared: nil keeps SQLite.
    public var postgres: PostgresClusterConfig?
    /// The `objectStorage:` section as written, for its own decoder (nil when absent).
    public var objectStorage: ConfigNode?

    public init(postgres: PostgresClusterConfig? = nil, objectStorage: ConfigNode? = nil) {
        self.postgres = postgres
        self.objectStorage = objectStorage
    }

    /// Whether the stores are shared between hosts.
    public var isShared: Bool { postgres != nil }

    /// Reads `<root>/cluster.yaml` (if present) and applies the `JOBRUN_POSTGRES_*` variables
    /// over it. Every problem is a `JobError.config` (exit 78) naming the file and line.
    public static func load(
        root: DataRoot, environment: [String: String] = LaunchEnvironment.variables
    ) throws(JobError) -> ClusterConfig {
        let path = root.url.appendingPathComponent(fileName).path
        var config = ClusterConfig()
        var st = stat()
        if stat(path, &st) == 0 {
            if let problem = CredentialFileMode.problem(mode: st.st_mode, group: st.st_gid) {
                throw .config("the cluster configuration \(path): \(problem); it names credentials: \(CredentialFileMode.fix(path))")
            }
            if st.st_uid != geteuid() && st.st_uid != 0 {
                throw .config(
                    "the cluster configuration \(path) is owned by \(DataRoot.userName(st.st_uid)), not by \(DataRoot.userName(geteuid())) who runs jobrun")
            }
            let bytes: [UInt8]
            switch SmallFile.read(path, limit: maxSize) {
            case .success(let data): bytes = data
            case .failure(let problem): throw .config("cannot read the cluster configuration \(path): \(problem.message)")
            }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw .config("\(path): the cluster configuration is not UTF-8 text") }
            config = try parse(text, path: path, rootDirectory: root.path)
        } else if errno != ENOENT {
            throw .config("cannot read the cluster configuration \(path): \(StorageFailure.describe(errno: errno))")
        }
        config.postgres = try PostgresClusterConfig.applying(environment: environment, to: config.postgres, rootDirectory: root.path)
        return config
    }

    /// Parses the file's text; `path` names it in errors, relative paths in it resolve against
    /// `rootDirectory`.
    public static func parse(_ text: String, path: String, rootDirectory: String) throws(JobError) -> ClusterConfig {
        let root: ConfigNode?
        do { root = try ConfigNode.parse(yaml: text, file: path) } catch {
            throw .config("invalid cluster configuration: " + error.errors.map(\.description).joined(separator: "; "))
        }
        guard let root else { return ClusterConfig() }
        guard case .mapping(let entries) = root.value else {
            throw .config("invalid cluster configuration: \(root.position): the file must be a mapping (`postgres:`, `objectStorage:`)")
        }
        var config = ClusterConfig()
        var problems: [String] = []
        for entry in entries {
            switch entry.key {
            case "postgres":
                switch PostgresClusterConfig.parse(entry.value, rootDirectory: rootDirectory) {
                case .success(let pg): config.postgres = pg
                case .failure(let e): problems += e.problems
                }
            case "objectStorage":
                config.objectStorage = entry.value
            default:
                problems.append(
                    "\(entry.keyPosition): unknown key `\(AccountCloudConfig.shown(entry.key))` (known: \(knownKeys.sorted().joined(separator: ", ")))")
            }
        }
        if !problems.isEmpty { throw .config("invalid cluster configuration: " + problems.joined(separator: "; ")) }
        return config
    }
}
