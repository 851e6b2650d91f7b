import CloudCore
import Foundation
import Postbox
import Synchronization

/// The cluster's shared media tier, when `cluster.yaml` enables it (`objectStorage.sharedMedia`):
/// made once per process and data root on first use — the bucket's client and the tier's index
/// store (``PostboxStore/openSharedMediaTier(root:cluster:key:)``, under the root's key).
public enum SharedMediaTierSetup {
    private static let made = Mutex<[String: SharedMediaTierSetupResult]>([:])

    /// The tier and its limits for `root`, or nil when the tier is not enabled. A tier that is
    /// enabled but cannot be set up (credentials, store) is a `JobError.config`.
    public static func tier(root: DataRoot, environment: [String: String] = LaunchEnvironment.variables) throws(JobError)
        -> SharedMediaTierSetupResult?
    {
        if let known = made.withLock({ $0[root.path] }) { return known }
        let cluster = try ClusterConfig.load(root: root, environment: environment)
        guard let config = cluster.objectStorage, config.sharedMedia.enabled else { return nil }
        let transport: any Transport
        do { transport = try CurlTransport() } catch {
            throw JobError.config("cannot set up the transport for the shared media tier in \(config.bucket): \(error)")
        }
        let client = try config.client(transport: transport, environment: environment)
        let key = try RootKey.load(root: root, environment: environment)
        let store: Postbox
        do { store = try PostboxStore.openSharedMediaTier(root: root, cluster: cluster, key: key) } catch let error as JobError {
            throw error
        } catch {
            throw StorageFailure.jobError(error, doing: "cannot open the shared media tier's index")
        }
        let tier = SharedMediaTier(
            client: client, store: store, prefix: config.prefix, host: ProcessInfo.processInfo.hostName,
            scratch: { try root.directory(["temp", "media-tier"]) }, partSize: config.partSize)
        let result = SharedMediaTierSetupResult(tier: tier, limits: config.sharedMedia)
        return made.withLock { made in
            if let raced = made[root.path] { return raced }
            made[root.path] = result
            return result
        }
    }
}

/// A set-up tier and its configured limits.
public struct SharedMediaTierSetupResult: Sendable {
    public let tier: SharedMediaTier
    public let limits: ObjectStorageConfig.SharedMedia
}
