import ConfinedFiles
import Foundation
import MediaBox
import Postbox

/// Read-only views of a data root, for `jobrun status` and `jobrun stats`: each account's stores
/// are opened read-only (a reader never blocks a running job) and nothing is created.
public struct StoreInspection: Sendable {
    public let root: DataRoot

    public init(root: DataRoot) { self.root = root }

    /// A run record and the account it was recorded in.
    public struct AccountRun: Sendable {
        public var account: Int64
        public var run: JobRunRecord
    }

    /// Cache usage of one account, from its StorageBox.
    public struct AccountCache: Sendable {
        public var account: Int64
        public var mediaPath: String
        public var stats: StorageStats
        /// Files on disk the index does not count (complete files without a row, foreign
        /// entries), from a walk that changes nothing.
        public var notIndexed: StorageUsage
        /// Entries that are partial files: prefixes (a video's header and first bytes) kept as
        /// cache entries, counted with the bytes they hold.
        public var partialPrefixes: StorageUsage
    }

    /// Why the root cannot be read at all (it does not exist, or is not a directory), or nil.
    public func missingRoot() -> String? {
        var st = stat()
        guard stat(root.path, &st) == 0 else {
            // There, but not this user's to read: the readers refuse it with the reason (78).
            if errno == EACCES || errno == EPERM { return nil }
            return "no data root at \(root.path): \(StorageFailure.describe(errno: errno)) (give --root or set \(DataRoot.environmentVariable))"
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { return "\(root.path) is not a directory (give --root the data root)" }
        return nil
    }

    /// Postbox usage of one account: bytes per table and per peer, WAL, free pages.
    public struct AccountDatabase: Sendable {
        public var account: Int64
        public var usage: DatabaseUsage
    }

    /// Accounts that have a Postbox, ascending: the schemas of the shared store, or the account
    /// folders with a database file under the root.
    private func storeAccounts(_ cluster: ClusterConfig) throws(JobError) -> [Int64] {
        guard let pg = cluster.postgres else {
            return accounts().filter { FileManager.default.fileExists(atPath: root.account($0).postboxFile.path) }
        }
        do { return try PostboxStore.sharedAccounts(pg) } catch {
            throw StorageFailure.jobError(error, doing: "cannot list the accounts of the shared store")
        }
    }

    /// Refuses (78, with the reason) a root this user cannot read all of, or whose layout has a
    /// link, FIFO, hard link or unsafe mode in it: a report on what cannot be read would say
    /// "never run" or "0 B" where there are runs and files.
    func checkReadable() throws(JobError) {
        do throws(DataRootError) {
            try root.verifyLayoutWarning()
            let top = try root.rootDirectory(create: false)
            guard faccessat(top.descriptor, ".", R_OK | X_OK, AT_EACCESS) == 0 else {
                throw DataRootError.cannotCreate(path: root.path, errno: errno, holder: DataRoot.holder(fd: top.descriptor, path: root.path))
            }
            for account in accounts() {
                let directory = try root.directory(["account-\(account)"], create: false)
                if faccessat(directory.descriptor, ".", R_OK | X_OK, AT_EACCESS) != 0 {
                    throw DataRootError.cannotCreate(path: directory.path, errno: errno, holder: nil)
                }
            }
        } catch {
            if case .cannotCreate(let path, let code, let holder) = error, code == EACCES || code == EPERM {
                throw JobError(
                    "cannot read \(path): \(StorageFailure.describe(errno: code))" + (holder.map { "; \($0)" } ?? "")
                        + "; run this as the user who owns the data root", exitCode: .config, retryable: false)
            }
            throw JobError(error.description, exitCode: error.exitCode, retryable: false)
        }
    }

    /// Accounts that exist under the root (`account-<id>/`), ascending.
    public func accounts() -> [Int64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.compactMap { $0.hasPrefix("account-") ? Int64($0.dropFirst("account-".count)) : nil }.sorted()
    }

    /// What `jobrun status` shows of the runs: the recent ones, and each job's latest success and
    /// failure from the store's index (however many newer runs the history holds).
    public struct RunHistory: Sendable {
        public var recent: [AccountRun] = []
        public var latestSuccess: [String: AccountRun] = [:]
        public var latestFailure: [String: AccountRun] = [:]
    }

    /// The `limit` most recent runs of each job (or of `job` only), per account, newest first,
    /// and each job's latest success and failure across the accounts. On a shared store
    /// (`cluster.yaml`) the runs are the whole cluster's.
    public func runHistory(job: String? = nil, limit: Int) throws(JobError) -> RunHistory {
        var history = RunHistory()
        try checkReadable()
        func keepNewer(_ run: JobRunRecord?, account: Int64, in latest: inout [String: AccountRun]) {
            guard let run, latest[run.job].map({ $0.run.startedAt < run.startedAt }) ?? true else { return }
            latest[run.job] = AccountRun(account: account, run: run)
        }
        let cluster = try ClusterConfig.load(root: root)
        let key = try RootKey.load(root: root, reader: true)
        for account in try storeAccounts(cluster) {
            do {
                let postbox = try PostboxStore.open(account: account, paths: root.account(account), cluster: cluster, key: key, readOnly: true)
                try postbox.readSync { tx in
                    for name in try tx.jobRuns.jobNames() where job == nil || job == name {
                        history.recent += try tx.jobRuns.recent(job: name, limit: limit).map { AccountRun(account: account, run: $0) }
                        keepNewer(try tx.jobRuns.latest(job: name, .success), account: account, in: &history.latestSuccess)
                        keepNewer(try tx.jobRuns.latest(job: name, .failure), account: account, in: &history.latestFailure)
                    }
                }
            } catch {
                throw StorageFailure.jobError(error, doing: "cannot read the runs of account \(account)")
            }
        }
        return history
    }

    /// Cache usage of the given accounts (default: all), skipping accounts without a MediaBox.
    public func cacheStats(accounts wanted: [Int64]? = nil) throws(JobError) -> [AccountCache] {
        var result: [AccountCache] = []
        try checkReadable()
        for account in wanted ?? accounts() {
            let media = root.account(account).media.path
            do {
                // Reached beneath the root: a linked, unreadable or unsafe media folder is
                // refused, never reported as empty. Only a store that does not exist is skipped.
                let directory: ConfinedDirectory
                do throws(DataRootError) { directory = try root.account(account).mediaDirectory(create: false) } catch {
                    if case .cannotCreate(_, ENOENT, _) = error { continue }
                    throw error
                }
                guard try directory.status("storage") != nil else { continue }
                let box = try MediaBox(directory: directory, readOnly: true)
                result.append(
                    AccountCache(
                        account: account, mediaPath: media, stats: try box.stats(), notIndexed: try box.notIndexed(),
                        partialPrefixes: try box.partialEntries()))
            } catch {
                throw StorageFailure.jobError(error, doing: "cannot read the media cache of account \(account)")
            }
        }
        return result
    }

    /// Postbox usage of the given accounts (default: all), skipping accounts without a Postbox.
    public func databaseUsage(accounts wanted: [Int64]? = nil) throws(JobError) -> [AccountDatabase] {
        var result: [AccountDatabase] = []
        let cluster = try ClusterConfig.load(root: root)
        let key = try RootKey.load(root: root, reader: true)
        let existing = try storeAccounts(cluster)
        for account in wanted.map({ $0.filter(existing.contains) }) ?? existing {
            do {
                let postbox = try PostboxStore.open(account: account, paths: root.account(account), cluster: cluster, key: key, readOnly: true)
                result.append(AccountDatabase(account: account, usage: try postbox.databaseUsage(perPeer: true)))
            } catch {
                throw StorageFailure.jobError(error, doing: "cannot read the database of account \(account)")
            }
        }
        return result
    }

    /// Opens the Postbox at `path` read-only with the root's `key`. A WAL database needs its `-shm` file; when the
    /// directory cannot take it (a read-only file system or a directory nobody may write), the
    /// store is opened as immutable instead: nothing can be writing it then. (SQLite itself reads
    /// a kept WAL on a read-only file system when its `-shm` is there; an immutable open of a
    /// store whose WAL holds commits is refused by Postbox.)
    static func openPostbox(_ path: String, key: StoreKey?) throws -> Postbox {
        do {
            return try Postbox(path: path, readOnly: true, key: key, allowInsecureFiles: DataRoot.allowsInsecure)
        } catch {
            guard directoryIsFrozen((path as NSString).deletingLastPathComponent) else { throw error }
            return try Postbox(path: path, readOnly: true, immutable: true, key: key, allowInsecureFiles: DataRoot.allowsInsecure)
        }
    }

    /// True when nobody can create files in `directory`: a read-only mount, or no write bit at all.
    static func directoryIsFrozen(_ directory: String) -> Bool {
        var fs = statvfs()
        if statvfs(directory, &fs) == 0, fs.f_flag & UInt(ST_RDONLY) != 0 { return true }
        var st = stat()
        return stat(directory, &st) == 0 && st.st_mode & 0o222 == 0
    }
}
