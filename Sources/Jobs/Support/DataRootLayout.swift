import ConfinedFiles
import Foundation
import MediaBox
import Postbox

/// Every path jobrun uses under the data root, with its kind: the one list of the layout.
/// `DataRoot.verifyLayout()` checks each path that exists before a run touches anything, and
/// the hardening tests plant links, FIFOs, hard links and unsafe modes at each of them, so a
/// path added here is checked and tested without anyone writing a new case.
///
/// Patterns (`metrics/jobrun_*.prom`, the shard folders, staged uploads) stand for the entries
/// that exist when the layout is listed; the contents of the shard folders (one file per
/// cached resource, millions of them) are not listed: MediaBox reaches each of them beneath the
/// media directory's descriptor when it uses it.
///
/// A path is **required** unless said otherwise: a link, FIFO, hard link or unsafe mode there
/// stops every command (exit 78, naming it). A path marked **optional** is one jobrun can do
/// without: the problem is logged (`layout.skipped`, naming the path and what is wrong) and the
/// command goes on without it. Only the per-job metrics files are optional: each is a side
/// channel for the textfile collector (the run record, the log and `--json` say the same),
/// jobrun never reads through a link there (its rename replaces the link itself), and a metrics
/// file that cannot be written is already a logged `metrics.write_failed`, not a failed run.
/// Everything else stays required: stores, staged uploads, locks and logs hold what the run
/// needs, and pause notes and alert notes decide whether a job runs or alerts, so skipping
/// one would change what a run does without anyone asking.
public struct DataRootPath: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable { case directory, file }

    /// Components below the root (`["account-0", "postbox", "media", "cache"]`).
    public let components: [String]
    public let kind: Kind
    /// jobrun writes, truncates or appends to it: a hard-linked file there is refused.
    public let writes: Bool
    /// jobrun can do without it: a problem there is logged and skipped, not a refusal.
    public let optional: Bool

    public init(_ components: [String], _ kind: Kind, writes: Bool = true, optional: Bool = false) {
        self.components = components
        self.kind = kind
        self.writes = writes
        self.optional = optional
    }

    /// The path relative to the root (`account-0/postbox/media/cache`).
    public var relative: String { components.joined(separator: "/") }
    public var description: String { relative + (kind == .directory ? "/" : "") }
}

extension DataRoot {
    /// The fixed part of the layout: the root's own folders and the files it keeps there.
    static let sharedFolders = ["accounts-metadata", "logs", "temp", "metrics", "suspended", "alerts", "locks", PostboxStore.sharedMediaTierDirectory]

    /// Every path of the layout that exists now (and the fixed folders whether they exist or
    /// not), for the root and every `account-<id>` in it.
    public func layout() -> [DataRootPath] {
        var paths: [DataRootPath] = []
        let root = try? rootDirectory(create: false)
        func children(_ components: [String]) -> [String] {
            guard let root, let directory = try? root.directory(components.joined(separator: "/")) else { return [] }
            return directory.entries().sorted()
        }
        for folder in Self.sharedFolders { paths.append(DataRootPath([folder], .directory)) }
        paths.append(DataRootPath([ClusterConfig.fileName], .file, writes: false))
        // The store key (`keys/store.key`) and its folder.
        let key = RootKeySource.rootRelativePath.split(separator: "/").map(String.init)
        paths.append(DataRootPath(Array(key.dropLast()), .directory))
        if children(Array(key.dropLast())).contains(key[key.count - 1]) { paths.append(DataRootPath(key, .file, writes: false)) }
        for name in children(["logs"]) where name.hasSuffix("-logs") {
            paths.append(DataRootPath(["logs", name], .directory))
            for file in children(["logs", name]) where !file.hasPrefix(".") { paths.append(DataRootPath(["logs", name, file], .file)) }
        }
        for name in children(["temp"]) { paths.append(DataRootPath(["temp", name], .directory)) }
        for name in children(["metrics"]) where name.hasSuffix(".prom") {
            paths.append(DataRootPath(["metrics", name], .file, optional: true))
        }
        for name in children(["suspended"]) where !name.hasPrefix(".") { paths.append(DataRootPath(["suspended", name], .file)) }
        for name in children(["alerts"]) where !name.hasPrefix(".") { paths.append(DataRootPath(["alerts", name], .file)) }
        for name in children(["locks"]) where name.hasSuffix(".lock") { paths.append(DataRootPath(["locks", name], .file)) }
        for name in children(["accounts-metadata"]) { paths.append(DataRootPath(["accounts-metadata", name], .file)) }
        for name in children([PostboxStore.sharedMediaTierDirectory]) {
            paths.append(DataRootPath([PostboxStore.sharedMediaTierDirectory, name], .file))
        }
        for name in children([]) where name.hasPrefix("account-") && Int64(name.dropFirst(8)) != nil {
            paths += AccountPaths.layout(account: name, children: children)
        }
        return paths
    }

    /// Checks every path of `layout()` that exists: no link at any component, the right kind
    /// (no FIFO, socket or device where a file or folder belongs), one link for a file jobrun
    /// writes, and the root's policy on owners and modes. The first problem at a required path
    /// is thrown (exit 78 naming the path and what is wrong); a problem at an optional path is
    /// returned, for the caller to log as skipped; a missing path is fine (jobrun creates it).
    @discardableResult
    public func verifyLayout() throws(DataRootError) -> [DataRootError] {
        let root = try rootDirectory(create: false)
        var skipped: [DataRootError] = []
        for path in layout() {
            do throws(ConfinedFileError) {
                switch path.kind {
                case .directory:
                    _ = try root.directory(path.relative)
                case .file:
                    _ = try root.checkFile(path.relative, writes: path.writes)
                }
            } catch {
                if case .system(_, _, ENOENT) = error { continue }
                if path.optional {
                    skipped.append(DataRootError(error))
                    continue
                }
                throw DataRootError(error)
            }
        }
        return skipped
    }

    /// `verifyLayout()` for a command without a log: each optional path skipped is said on
    /// stderr, as the `layout.skipped` log line says it for a run.
    public func verifyLayoutWarning() throws(DataRootError) {
        for problem in try verifyLayout() {
            FileHandle.standardError.write(Data("jobrun: warning: \(Self.skippedMessage(problem))\n".utf8))
        }
    }

    /// What the log says of an optional path that was skipped.
    public static func skippedMessage(_ problem: DataRootError) -> String {
        "layout.skipped: \(problem.description); the layout marks it optional, so this run goes on without it"
    }
}

extension AccountPaths {
    /// The layout of one account folder (`account` is its name, `account-<id>`); `children`
    /// lists a folder of the root.
    static func layout(account: String, children: ([String]) -> [String]) -> [DataRootPath] {
        var paths: [DataRootPath] = [
            DataRootPath([account], .directory),
            DataRootPath([account, "config.yaml"], .file, writes: false),
            DataRootPath([account, "postbox"], .directory),
            DataRootPath([account, "postbox", "db"], .directory),
            DataRootPath([account, "postbox", "media"], .directory),
            DataRootPath([account, "postbox", "media", "storage"], .directory),
            DataRootPath([account, "uploads"], .directory),
        ]
        for suffix in ["", "-wal", "-shm", "-journal"] {
            paths.append(DataRootPath([account, "postbox", "db", Postbox.databaseFileName + suffix], .file))
            paths.append(DataRootPath([account, "postbox", "media", "storage", "storage.sqlite" + suffix], .file))
        }
        for location in MediaStorageLocation.allCases {
            let base = [account, "postbox", "media"] + (location.directoryName.map { [$0] } ?? [])
            if location.directoryName != nil { paths.append(DataRootPath(base, .directory)) }
            for name in children(base) where MediaShard.isShardName(name) { paths.append(DataRootPath(base + [name], .directory)) }
        }
        for name in children([account, "uploads"]) { paths.append(DataRootPath([account, "uploads", name], .file, writes: false)) }
        return paths
    }
}
