import Foundation
import Postbox
import PostboxPostgres

/// Where an account's Postbox lives: the SQLite file under its account folder, or — when
/// `cluster.yaml` shares the stores — its own schema on the cluster's PostgreSQL server.
public enum PostboxStore {
    /// Opens (creating unless `readOnly`) account `id`'s Postbox with the root's `key`
    /// (`RootKey.load`; nil for a plaintext root).
    public static func open(account id: Int64, paths: AccountPaths, cluster: ClusterConfig, key: StoreKey?, readOnly: Bool = false) throws -> Postbox {
        guard let pg = cluster.postgres else {
            return readOnly
                ? try StoreInspection.openPostbox(paths.postboxFile.path, key: key)
                : try Postbox(path: paths.postboxFile.path, key: key, allowInsecureFiles: DataRoot.allowsInsecure)
        }
        let schema = pg.schema(account: id)
        let box = try PostgresValueBox(
            endpoint: try pg.endpoint(), schema: schema, readOnly: readOnly, cipher: try cipher(key),
            statementTimeout: PostgresClusterConfig.storeStatementTimeoutSeconds)
        return try Postbox(valueBox: box, name: "postgres:\(schema)", readOnly: readOnly)
    }

    /// Opens (creating) the shared media tier's index store: schema `<schemaPrefix>_media_tier`
    /// on the cluster's PostgreSQL server, or `<root>/media-tier/db.sqlite` on a single host,
    /// with the root's `key`.
    public static func openSharedMediaTier(root: DataRoot, cluster: ClusterConfig, key: StoreKey?) throws -> Postbox {
        guard let pg = cluster.postgres else {
            let directory = root.url.appendingPathComponent(sharedMediaTierDirectory, isDirectory: true)
            try DataRoot.makeDirectory(directory)
            return try Postbox(
                path: directory.appendingPathComponent(Postbox.databaseFileName).path, key: key, allowInsecureFiles: DataRoot.allowsInsecure)
        }
        let schema = "\(pg.schemaPrefix)_media_tier"
        let box = try PostgresValueBox(
            endpoint: try pg.endpoint(), schema: schema, cipher: try cipher(key), statementTimeout: PostgresClusterConfig.storeStatementTimeoutSeconds)
        return try Postbox(valueBox: box, name: "postgres:\(schema)")
    }

    /// The cipher that seals values on the shared server under the root's key: there, the
    /// server and its backups see keys, sizes and timing, never a value.
    static func cipher(_ key: StoreKey?) throws -> ValueCipher? {
        try key.map { try ValueCipher(storeKey: $0) }
    }

    /// The folder of the tier's index under a single host's data root.
    public static let sharedMediaTierDirectory = "media-tier"

    /// Accounts whose Postbox exists in the cluster's database, ascending.
    public static func sharedAccounts(_ pg: PostgresClusterConfig) throws -> [Int64] {
        try PostgresValueBox.storeNames(endpoint: try pg.endpoint(), prefix: "\(pg.schemaPrefix)_account_")
            .compactMap { pg.account(schema: $0) }.sorted()
    }
}
