import Foundation
import Postbox
import PostboxPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// The engine behind a shared store's coordination: the work queue and the run locks of the
/// hosts sharing the cluster's PostgreSQL server. Jobs speaks only the protocols
/// (`ClusterWorkQueue`, `ClusterRunLockSession`); this is where they are opened, as
/// `PostboxStore` opens the stores.
extension PostgresClusterConfig {
    /// The cluster's work queue, claiming for `holder` (this process by default).
    public func workQueue(holder: ClusterWorkHolder = ClusterWorkHolder(host: ProcessInfo.processInfo.hostName, pid: getpid())) throws(JobError)
        -> any ClusterWorkQueue
    {
        PostgresClusterWorkQueue(endpoint: try endpoint(), schemaPrefix: schemaPrefix, leaseSeconds: leaseSeconds, holder: holder)
    }

    /// The locks of `job` over `accounts`, held for `host`.
    func runLockSession(job: String, accounts: [Int64], host: String) throws(JobError) -> any ClusterRunLockSession {
        PostgresClusterRunLockSession(endpoint: try endpoint(), schemaPrefix: schemaPrefix, job: job, accounts: accounts, host: host)
    }
}
