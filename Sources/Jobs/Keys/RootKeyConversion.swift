import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// `jobrun encrypt` (a plaintext root becomes encrypted under a new random key) and `jobrun
/// rekey` (every store moves to a new random key), crash-safe and resumable.
///
/// The new key is written first, beside the key file, as `<key file>.next`: its presence is the
/// journal that says a conversion is under way (and every other process refuses the root until
/// it is finished). Then each store in turn is checkpointed, copied into `<store>.converting`
/// under the new key (`SqliteValueBox.export`, synced), and renamed over the store. Last, the
/// new key is renamed over the key file. So at every instant each store opens with the old key
/// (or none) or the new one, and both keys are on disk; a rerun looks at each store, skips those
/// that already open with the new key, and finishes.
///
/// Both hold the root's stores lock exclusive (`RootStoresLock`): they refuse to start while any
/// other process has a store of the root open.
public enum RootKeyConversion {
    public enum Operation: String, Sendable {
        case encrypt, rekey
    }

    /// What a conversion did.
    public struct Report: Sendable {
        /// Stores rewritten now (a rerun counts only what was left).
        public var converted: Int
        /// Stores found already under the new key (converted before an interruption).
        public var alreadyConverted: Int
        /// Bytes of the stores rewritten.
        public var bytes: Int64
        public var seconds: Double
        /// The key file that now holds the root's key.
        public var keyFile: String
        /// True when there was nothing to do (`encrypt` of a root that is encrypted already).
        public var nothingToDo: Bool
    }

    /// Converts every store of `root`. Exit 75 while another process has the root's stores open;
    /// exit 78 for a root that cannot be converted (a shared PostgreSQL store, a key from a
    /// systemd credential, `encrypt` of an encrypted root or `rekey` of a plaintext one).
    public static func run(
        _ operation: Operation, root: DataRoot, environment: [String: String] = LaunchEnvironment.variables
    ) throws(JobError) -> Report {
        let started = Date()
        if try ClusterConfig.load(root: root, environment: environment).isShared {
            throw .config(
                "\(root.path) keeps its stores on a shared PostgreSQL server; `jobrun \(operation.rawValue)` converts the SQLite stores of a single host")
        }
        let lock = try RootStoresLock.holdExclusive(root, doing: operation.rawValue)
        defer { close(lock) }
        let source = RootKeySource.locate(root: root, environment: environment)
        if case .credential(let path)? = source {
            throw .config(
                "the key of \(root.path) comes from the systemd credential \(path); convert with a key file (`\(RootKeySource.fileVariable)`), then load the new key as the credential"
            )
        }
        let target = source ?? .rootFile(path: root.url.appendingPathComponent(RootKeySource.rootRelativePath).path)
        let next = pending(target)
        let stores = storeFiles(root)

        let oldKey: StoreKey?
        let newKey: StoreKey
        if exists(next.path) {
            newKey = try KeyFile.read(next, root: root)
            oldKey = exists(target.path) ? try KeyFile.read(target, root: root) : nil
        } else {
            oldKey = exists(target.path) ? try KeyFile.read(target, root: root) : nil
            switch (operation, oldKey) {
            case (.encrypt, _?):
                var plaintext = 0
                for path in stores {
                    if try encryptionState(path) == false { plaintext += 1 }
                }
                if plaintext == 0 {
                    return Report(converted: 0, alreadyConverted: stores.count, bytes: 0, seconds: 0, keyFile: target.path, nothingToDo: true)
                }
                throw .config("\(root.path) already has a key (\(target)) but holds plaintext stores; `jobrun rekey` moves them all to a new key")
            case (.rekey, nil):
                throw .config("\(root.path) has no key (\(target) does not exist): `jobrun encrypt` encrypts a plaintext root")
            default:
                break
            }
            newKey = StoreKey.random()
            try writeKeyFile(newKey, at: next, root: root)
            Failpoints.hitBlocking("convert-after-next-key")
        }

        var report = Report(converted: 0, alreadyConverted: 0, bytes: 0, seconds: 0, keyFile: target.path, nothingToDo: false)
        for store in stores {
            do {
                if let bytes = try convert(store, from: oldKey, to: newKey, root: root) {
                    report.converted += 1
                    report.bytes += bytes
                } else {
                    report.alreadyConverted += 1
                }
            } catch let error as JobError {
                throw error
            } catch {
                throw StorageFailure.jobError(error, doing: "cannot \(operation.rawValue) \(store)")
            }
        }
        Failpoints.hitBlocking("convert-before-key-install")
        try install(next, over: target, root: root)
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// The `.next` file of a conversion of `root` left unfinished, or nil.
    static func pendingKeyFile(root: DataRoot, source: RootKeySource?) -> String? {
        var candidates = [root.url.appendingPathComponent(RootKeySource.rootRelativePath).path]
        if let source { candidates.append(source.path) }
        return candidates.map { pending(.rootFile(path: $0)).path }.first(where: exists)
    }

    /// Every SQLite store of the root: each account's Postbox and the shared media tier's index.
    static func storeFiles(_ root: DataRoot) -> [String] {
        let inspection = StoreInspection(root: root)
        var files = inspection.accounts().map { root.account($0).postboxFile.path }
        files.append(
            root.url.appendingPathComponent(PostboxStore.sharedMediaTierDirectory).appendingPathComponent(Postbox.databaseFileName).path)
        return files.filter(exists)
    }

    /// Rewrites `path` under `newKey`; the bytes written, or nil when it was already under it.
    private static func convert(_ path: String, from oldKey: StoreKey?, to newKey: StoreKey, root: DataRoot) throws -> Int64? {
        let converting = path + ".converting"
        let (folder, name) = try place(path, root: root)
        let convertingName = name + ".converting"
        removeWithCompanions(convertingName, in: folder)
        let encrypted = try encryptionState(path) ?? false
        if encrypted, try opens(path, with: newKey) { return nil }
        let fromKey: StoreKey? = encrypted ? oldKey : nil
        if encrypted, fromKey == nil {
            throw JobError.config("\(path) is encrypted under a key that is neither the root's key nor the new one")
        }
        // Everything committed moves into the database file, so the file alone is the store.
        let box = try SqliteValueBox(path: path, options: options(key: fromKey))
        let checkpoint = try box.walCheckpoint(truncate: true, maxWaitMilliseconds: 60_000)
        box.close()
        if checkpoint.busy { throw JobError("\(path) is in use by another process", exitCode: .temporary, retryable: true) }
        try SqliteValueBox.export(from: path, fromKey: fromKey, to: converting, toKey: newKey)
        try settle(converting, key: newKey, in: folder)
        Failpoints.hitBlocking("convert-after-export")
        // The old WAL is empty now; left in place it would be read against the new file.
        for suffix in ["-wal", "-shm"] { _ = try? folder.removeFile(name + suffix) }
        try folder.rename(convertingName, to: name)
        try folder.sync()
        Failpoints.hitBlocking("convert-after-rename")
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// Checkpoints a freshly written copy so its file alone holds every page, and removes its WAL.
    private static func settle(_ path: String, key: StoreKey, in folder: ConfinedDirectory) throws {
        let box = try SqliteValueBox(path: path, options: options(key: key))
        _ = try box.walCheckpoint(truncate: true, maxWaitMilliseconds: 60_000)
        box.close()
        let name = (path as NSString).lastPathComponent
        for suffix in ["-wal", "-shm", "-journal"] { _ = try? folder.removeFile(name + suffix) }
        if let fd = try? folder.openFile(name, .read) {
            fsync(fd)
            close(fd)
        }
    }

    /// The folder holding the store file `path`, held open beneath the root's descriptor (no
    /// link followed on the way), and the file's name in it.
    private static func place(_ path: String, root: DataRoot) throws -> (ConfinedDirectory, String) {
        let url = URL(fileURLWithPath: path)
        guard let components = root.components(of: url.deletingLastPathComponent()) else {
            throw JobError.config("\(path) is not inside the data root \(root.path)")
        }
        return (try root.directory(components, create: false), url.lastPathComponent)
    }

    /// Whether `path` opens (and reads) with `key`.
    private static func opens(_ path: String, with key: StoreKey) throws -> Bool {
        do {
            let box = try SqliteValueBox(path: path, options: options(key: key, readOnly: true))
            defer { box.close() }
            _ = try box.queryInt("SELECT count(*) FROM sqlite_master")
            return true
        } catch PostboxError.wrongKey {
            return false
        }
    }

    /// Whether the file at `path` is encrypted, from its header; nil when there is none.
    static func encryptionState(_ path: String) throws(JobError) -> Bool? {
        do { return try SqliteValueBox.isEncrypted(path: path) } catch {
            throw StorageFailure.jobError(error, doing: "cannot read the header of \(path)")
        }
    }

    private static func options(key: StoreKey?, readOnly: Bool = false) -> SqliteValueBox.Options {
        var options = SqliteValueBox.Options(readOnly: readOnly, synchronous: .full)
        options.key = key
        return options
    }

    /// `<key file>.next`, the journal of a conversion under way.
    static func pending(_ target: RootKeySource) -> RootKeySource {
        switch target {
        case .rootFile(let path): return .rootFile(path: path + ".next")
        case .configuredFile(let path): return .configuredFile(path: path + ".next")
        case .credential(let path): return .credential(path: path + ".next")
        }
    }

    /// Writes `key` as a new key file at `destination` (0600, synced): into a temporary file
    /// first, then renamed, so a crash never leaves half a key. Below the root the directory is
    /// reached without following links.
    static func writeKeyFile(_ key: StoreKey, at destination: RootKeySource, root: DataRoot) throws(JobError) {
        let url = URL(fileURLWithPath: destination.path)
        let directory = url.deletingLastPathComponent()
        do {
            let directoryFD = try DataRoot.openDirectory(directory, in: destination.isUnderRoot ? root : nil)
            defer { close(directoryFD) }
            try MetricsWriter.atomicWrite(
                String(decoding: KeyFile.encode(key), as: UTF8.self), in: directoryFD, name: url.lastPathComponent,
                directoryPath: directory.path, mode: 0o600)
        } catch {
            throw StorageFailure.jobError(error, doing: "cannot write the key file \(destination.path)")
        }
    }

    /// Renames the new key over the old one, beside it, and syncs their directory: the
    /// conversion's last step. Below the root the directory is reached without following links.
    private static func install(_ next: RootKeySource, over target: RootKeySource, root: DataRoot) throws(JobError) {
        let url = URL(fileURLWithPath: target.path)
        let fd: Int32
        do { fd = try DataRoot.openDirectory(url.deletingLastPathComponent(), in: target.isUnderRoot ? root : nil) } catch {
            throw StorageFailure.jobError(error, doing: "cannot open the key's directory to put the new key in place")
        }
        defer { close(fd) }
        let nextName = (next.path as NSString).lastPathComponent
        guard renameat(fd, nextName, fd, url.lastPathComponent) == 0 else {
            throw JobError("cannot put the new key in place at \(target.path): \(StorageFailure.describe(errno: errno))", exitCode: .cannotCreate)
        }
        guard fsync(fd) == 0 else {
            throw JobError("cannot sync the key's directory: \(StorageFailure.describe(errno: errno))", exitCode: .ioError)
        }
    }

    private static func removeWithCompanions(_ name: String, in folder: ConfinedDirectory) {
        for suffix in ["", "-wal", "-shm", "-journal"] { _ = try? folder.removeFile(name + suffix) }
    }

    private static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }
}
