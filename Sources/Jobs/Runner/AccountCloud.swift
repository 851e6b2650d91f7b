import CloudCore
import Foundation
import MediaBox
import Postbox
import Synchronization

/// An account's connection to the cloud, shared by every job of the process: one `CloudClient`
/// (one transport, one connection pool) and one `MultipartFetch` on it (one parts-in-flight
/// limit). Both are made on first use from `config.yaml`, so jobs that never touch the network
/// (cleanup, stats) need no config; a missing or invalid file is a `JobError.config` naming it.
/// The fetcher's revalidator is the account's one `RevalidationContext` (made with the client).
final class AccountCloud: Sendable {
    private let accountId: Int64
    private let paths: AccountPaths
    private let postbox: Postbox
    private let client = Mutex<CloudClient?>(nil)
    private let fetch = Mutex<MultipartFetch?>(nil)
    private let revalidationContext = Mutex<RevalidationContext?>(nil)
    private let chain = Mutex<(any MediaResourceFetcher)?>(nil)

    init(accountId: Int64, paths: AccountPaths, postbox: Postbox) {
        self.accountId = accountId
        self.paths = paths
        self.postbox = postbox
    }

    func cloudClient() throws -> CloudClient {
        try client.withLock { (client: inout CloudClient?) throws -> CloudClient in
            if let client { return client }
            let config = try AccountCloudConfig.load(paths)
            let created: CloudClient
            do { created = try CloudClient(config: config) } catch {
                throw JobError.config("cannot set up the cloud client of account \(accountId): \(error)")
            }
            client = created
            return created
        }
    }

    /// The account's revalidation context: one per process, shared by every job and download.
    func revalidation() throws -> RevalidationContext {
        // Client first, outside this lock: the locks are never held together.
        let client = try cloudClient()
        let postbox = self.postbox
        return revalidationContext.withLock { (context: inout RevalidationContext?) -> RevalidationContext in
            if let context { return context }
            var options = RevalidationOptions()
            options.requestTimeout = client.config.requestTimeout
            let created = RevalidationContext(client: client, postbox: postbox, options: options)
            context = created
            return created
        }
    }

    func fetcher() throws -> MultipartFetch {
        // Client and revalidation context first, outside this lock.
        let client = try cloudClient()
        let revalidator = try revalidation()
        return fetch.withLock { (fetch: inout MultipartFetch?) -> MultipartFetch in
            if let fetch { return fetch }
            let created = MultipartFetch(client: client, revalidator: revalidator)
            fetch = created
            return created
        }
    }

    /// `cloudFetcher` behind the cluster's shared media tier when `cluster.yaml` enables it
    /// (bucket, then cloud; see `SharedTierFetcher`), else `cloudFetcher` itself. `observer`
    /// hears what the tier did.
    func chained(
        _ cloudFetcher: any MediaResourceFetcher, observer: @escaping @Sendable (SharedMediaTierEvent) -> Void = { _ in }
    ) throws -> any MediaResourceFetcher {
        guard let shared = try SharedMediaTierSetup.tier(root: DataRoot(url: paths.directory.deletingLastPathComponent())) else {
            return cloudFetcher
        }
        return SharedTierFetcher(tier: shared.tier, cloud: cloudFetcher, observer: observer)
    }

    /// The MediaBox's own fetcher: the account's `MultipartFetch`, behind the shared tier when
    /// there is one; made once.
    func mediaFetcher() throws -> any MediaResourceFetcher {
        if let made = chain.withLock({ $0 }) { return made }
        let made = try chained(try fetcher())
        return chain.withLock { chain in
            if let raced = chain { return raced }
            chain = made
            return made
        }
    }
}

/// The account MediaBox's fetcher: forwards every request to the account's shared
/// `MultipartFetch` (behind the shared media tier when the cluster has one), or fails it with
/// the config error when there is none.
struct AccountFetcher: MediaResourceFetcher {
    let cloud: AccountCloud

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        do {
            return try cloud.mediaFetcher().fetch(request)
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
    }

    func fetchCompleted(_ resource: any MediaResource, reader: MediaResourceReader) async {
        await (try? cloud.mediaFetcher())?.fetchCompleted(resource, reader: reader)
    }
}
