import CloudCore
import Foundation
import MediaBox
import Postbox

/// One account's shared stores: every job of a process that works on account N uses the same
/// `Postbox` (one serialized writer) and the same media directory, as Telegram's app extensions
/// share one app-group container.
public final class AccountContext: Sendable {
    public let id: Int64
    public let paths: AccountPaths
    public let postbox: Postbox
    public let mediaBox: MediaBox
    private let cloud: AccountCloud

    /// The account's cloud client (one transport, one connection pool for every job of the
    /// process), created on first use from `config.yaml`; a missing or invalid file is a
    /// `JobError.config` naming it. Wrap it with `CloudClient.with(observer:)` to log a job's retries.
    public func cloudClient() throws -> CloudClient { try cloud.cloudClient() }

    /// The account's downloader, the fetcher behind `mediaBox`: one `MultipartFetch` on the shared
    /// client, so every job's downloads share one parts-in-flight limit.
    public func fetcher() throws -> MultipartFetch { try cloud.fetcher() }

    /// The account's revalidation context (one per process, created with the client): refreshes
    /// expired file references, one request per parent entity, coordinated with other processes
    /// through Postbox leases. `fetcher()` uses it as its revalidator.
    public func revalidation() throws -> RevalidationContext { try cloud.revalidation() }

    /// `fetcher` behind the cluster's shared media tier when `cluster.yaml` enables one (the
    /// bucket first, then `fetcher`; see `SharedTierFetcher`), else `fetcher` itself; `observer`
    /// hears what the tier did. A tier that cannot be set up is a `JobError.config`.
    public func mediaFetcher(
        over fetcher: any MediaResourceFetcher, observer: @escaping @Sendable (SharedMediaTierEvent) -> Void = { _ in }
    ) throws -> any MediaResourceFetcher {
        try cloud.chained(fetcher, observer: observer)
    }

    /// Opens the account's stores (Postbox where `cluster` puts it, under the root's `key`); its
    /// MediaBox downloads through `fetcher()`, behind the shared media tier when the cluster has one.
    init(id: Int64, paths: AccountPaths, cluster: ClusterConfig, key: StoreKey?) throws {
        self.id = id
        self.paths = paths
        self.postbox = try PostboxStore.open(account: id, paths: paths, cluster: cluster, key: key)
        self.cloud = AccountCloud(accountId: id, paths: paths, postbox: postbox)
        self.mediaBox = try MediaBox(directory: paths.mediaDirectory(create: true), fetcher: AccountFetcher(cloud: cloud))
    }
}

/// Opens each account's stores once per process and hands the same instances to every job.
///
/// On a shared PostgreSQL server each open store holds one connection, so the pool keeps at most
/// `postgres.maxOpenStores` of them: past it, the least recently used store that no running job
/// holds is dropped (its connection closes when the last reference to it goes). A store a job
/// holds (`lease`) is never dropped, so while more stores are in use than the bound the pool
/// holds exactly those in use. Stores under the root (SQLite) are not bounded.
public actor AccountContextPool {
    public let root: DataRoot
    private struct Entry {
        var context: AccountContext
        /// Jobs holding it now (`lease` minus `release`).
        var leases: Int
        /// When it was last handed out, on `tick`'s clock: the least recent is dropped first.
        var lastUsed: UInt64
    }
    private var entries: [Int64: Entry] = [:]
    private var tick: UInt64 = 0
    private var cluster: ClusterConfig?
    /// The root's key, loaded with the cluster configuration (`RootKey.load`).
    private var key: StoreKey??

    public init(root: DataRoot) { self.root = root }

    /// How many accounts' stores are open now.
    public var openCount: Int { entries.count }

    /// The shared context of account `id`, opening (and creating) its stores on first use.
    /// The pool may drop it later (see the type); `lease` keeps it for a job's run.
    ///
    /// With `cloud`, the account's `config.yaml` is read and checked first: a missing or
    /// invalid one is a `JobError.config` (exit 78) and nothing is opened or created; so is a
    /// root key that is configured but unusable, and a store that does not match it (a
    /// plaintext store under a key, an encrypted one without its key, the wrong key). Storage
    /// failures become a `JobError` with the path, the reason and their sysexits code
    /// (`StorageFailure`): 73 a directory that cannot be created, 74 a full disk, 75 a busy store.
    public func context(for id: Int64, cloud: Bool = false) throws -> AccountContext {
        let context = try open(id, cloud: cloud)
        trim()
        return context
    }

    /// The contexts of `ids`, held open until `release(ids)`: the pool never drops a store a
    /// job holds. Fails as `context(for:cloud:)` does, holding nothing then.
    public func lease(_ ids: [Int64], cloud: Bool = false) throws -> [AccountContext] {
        var contexts: [AccountContext] = []
        do {
            for id in ids {
                contexts.append(try open(id, cloud: cloud))
                entries[id]?.leases += 1
            }
        } catch {
            release(ids.prefix(contexts.count))
            throw error
        }
        trim()
        return contexts
    }

    /// Ends one hold of `ids` taken by `lease`; stores past the bound may close now.
    public func release<S: Sequence<Int64>>(_ ids: S) {
        for id in ids where entries[id] != nil { entries[id]!.leases = max(0, entries[id]!.leases - 1) }
        trim()
    }

    /// The open context of `id`, marked as used now, or a new one.
    private func open(_ id: Int64, cloud: Bool) throws -> AccountContext {
        let paths = root.account(id)
        if cloud { _ = try AccountCloudConfig.load(paths) }
        tick += 1
        if let existing = entries[id] {
            entries[id]!.lastUsed = tick
            return existing.context
        }
        CloudCoreTypes.registerAll()  // so every job decodes the cloud media stored in messages and peers
        let context: AccountContext
        let cluster = try self.cluster ?? ClusterConfig.load(root: root)
        self.cluster = cluster
        trim(room: 1)  // the idle store it replaces closes before its connection opens
        let key = try self.key ?? RootKey.load(root: root)
        self.key = key
        do {
            try paths.createDirectories()
            context = try AccountContext(id: id, paths: paths, cluster: cluster, key: key)
        } catch {
            throw StorageFailure.jobError(error, doing: "cannot open the stores of account \(id)")
        }
        entries[id] = Entry(context: context, leases: 0, lastUsed: tick)
        return context
    }

    /// Drops the least recently used stores nobody holds until the bound is met with `room`
    /// to spare (or only held ones are left).
    private func trim(room: Int = 0) {
        guard let bound = cluster?.postgres?.maxOpenStores else { return }
        while entries.count + room > bound {
            guard let idle = entries.filter({ $0.value.leases == 0 }).min(by: { $0.value.lastUsed < $1.value.lastUsed }) else { return }
            entries[idle.key] = nil
        }
    }
}
