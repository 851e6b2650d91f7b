import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// The data-root layout of DESIGN §3: one directory holds every account's Postbox and MediaBox,
/// logs, temp and metrics. Directories are created 0700.
///
/// The root is a security boundary, the way sshd treats a user's `~/.ssh`: every file and
/// directory under it is reached beneath the root's descriptor through `ConfinedDirectory`
/// (no symbolic link followed at any component, no FIFO or device opened as a file, no
/// hard-linked file written), and the root and everything under it must be owned by the user
/// running jobrun and not writable by group or others (`JOBRUN_ALLOW_INSECURE_ROOT=1` accepts
/// such a root). The root path itself may be a symbolic link: choosing it is the operator's
/// decision. `DataRootLayout` lists every path jobrun uses under it.
public struct DataRoot: Sendable, Hashable {
    /// Environment variable naming the root when `--root` is not given.
    public static let environmentVariable = "JOBRUN_ROOT"
    /// Root used when neither `--root` nor `JOBRUN_ROOT` is set (relative to the working directory).
    public static let defaultPath = "./data"
    /// Set to `1` to accept a root (or a folder in it) owned by another user or writable by
    /// group or others. Symbolic links inside the root are refused regardless.
    public static let allowInsecureVariable = "JOBRUN_ALLOW_INSECURE_ROOT"

    public let url: URL

    public init(url: URL) { self.url = url.standardizedFileURL }
    public init(path: String) { self.init(url: URL(fileURLWithPath: path)) }

    /// `--root` wins, then `JOBRUN_ROOT`, then `./data`; relative paths are resolved against
    /// `currentDirectory` (the process's working directory when nil, asked for only then) so
    /// units and cron lines may use absolute paths only.
    public static func resolve(
        explicit: String?, environment: [String: String] = LaunchEnvironment.variables,
        currentDirectory: String? = nil
    ) -> DataRoot {
        let chosen = [explicit, environment[environmentVariable]].compactMap { $0 }.first { !$0.isEmpty } ?? defaultPath
        if chosen.hasPrefix("/") { return DataRoot(path: chosen) }
        return DataRoot(url: URL(fileURLWithPath: currentDirectory ?? FileManager.default.currentDirectoryPath).appendingPathComponent(chosen))
    }

    public var path: String { url.path }

    /// True when something exists at the root's path (a link or a file counts: using it then
    /// fails with its own clear error instead of creating a root beside it).
    public static func exists(_ root: DataRoot) -> Bool { fileType(root.path) != nil }

    /// `accounts-metadata/`: which accounts exist (SQLite).
    public var accountsMetadata: URL { url.appendingPathComponent("accounts-metadata", isDirectory: true) }
    /// `logs/`: one `<process>-logs/` directory per process type.
    public var logs: URL { url.appendingPathComponent("logs", isDirectory: true) }
    /// `logs/<process>-logs/`.
    public func logs(process: String) -> URL { logs.appendingPathComponent("\(process)-logs", isDirectory: true) }
    /// `temp/`.
    public var temp: URL { url.appendingPathComponent("temp", isDirectory: true) }
    /// `temp/<process>/`: parent of the per-launch TempBox directories.
    public func temp(process: String) -> URL { temp.appendingPathComponent(process, isDirectory: true) }
    /// `metrics/`: Prometheus textfile-collector output.
    public var metrics: URL { url.appendingPathComponent("metrics", isDirectory: true) }
    /// `suspended/`: one small file per job paused with `jobrun pause` (see `JobSuspension`).
    public var suspended: URL { url.appendingPathComponent("suspended", isDirectory: true) }
    /// `alerts/`: one small file per job in a failure streak (see `RunAlerts`).
    public var alerts: URL { url.appendingPathComponent("alerts", isDirectory: true) }

    /// Paths of one account.
    public func account(_ id: Int64) -> AccountPaths { AccountPaths(directory: url.appendingPathComponent("account-\(id)", isDirectory: true)) }

    /// Creates the root and its shared directories (0700), checking that the root is a
    /// directory this user owns and may write, and that nothing in it is a symbolic link or
    /// writable by others. Safe to call from several processes.
    public func createDirectories(accounts: [Int64] = []) throws(DataRootError) {
        let root = try rootDirectory(create: true)
        if faccessat(root.descriptor, ".", W_OK, AT_EACCESS) != 0 {
            throw .cannotCreate(path: path, errno: errno, holder: Self.holder(fd: root.descriptor, path: path))
        }
        for name in ["accounts-metadata", "logs", "temp", "metrics"] {
            do throws(ConfinedFileError) { _ = try root.directory(name, create: true) } catch {
                throw DataRootError(error, holder: Self.holder(fd: root.descriptor, path: path))
            }
        }
        for id in accounts { try account(id).createDirectories() }
    }

    /// Opens the root directory (creating it, and missing parents, 0700 when `create`) and
    /// checks its owner and mode. The caller closes the descriptor.
    public func openRoot(create: Bool) throws(DataRootError) -> Int32 {
        var fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0, errno == ENOENT, create {
            try Self.makeParents(url)
            fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard fd >= 0 else {
            let e = errno
            if e == ENOTDIR || e == EEXIST, Self.fileType(path) != nil, Self.fileType(path) != S_IFDIR { throw .notADirectory(path: path) }
            throw .cannotCreate(path: path, errno: e, holder: Self.nearestHolder(of: url))
        }
        do { try Self.check(fd: fd, path: path) } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Opens the directory `components` below the root, one component at a time without
    /// following symbolic links, creating missing ones 0700 when `create`, and checking each
    /// one's owner and mode. The caller closes the descriptor.
    public func openDirectory(_ components: [String], create: Bool = true) throws(DataRootError) -> Int32 {
        let directory = try self.directory(components, create: create)
        let fd = dup(directory.descriptor)
        guard fd >= 0 else { throw .cannotCreate(path: directory.path, errno: errno, holder: nil) }
        return fd
    }

    /// What the root accepts beyond the rules it never relaxes: foreign owners and group- or
    /// other-writable objects only with `JOBRUN_ALLOW_INSECURE_ROOT=1`.
    public var policy: ConfinementPolicy { ConfinementPolicy(allowInsecure: Self.allowsInsecure) }

    /// The root, held open: the one way to reach anything below it (see `ConfinedDirectory`).
    /// Created (0700, with missing parents) when `create`; its owner and mode are checked.
    public func rootDirectory(create: Bool) throws(DataRootError) -> ConfinedDirectory {
        ConfinedDirectory(adopting: try openRoot(create: create), path: path, policy: policy)
    }

    /// The directory `components` below the root, reached without following links, created
    /// 0700 when missing and `create`, each component checked against `policy`.
    public func directory(_ components: [String], create: Bool = true) throws(DataRootError) -> ConfinedDirectory {
        let root = try rootDirectory(create: create)
        do throws(ConfinedFileError) { return try root.directory(components.joined(separator: "/"), create: create) } catch {
            throw DataRootError(error, holder: Self.holder(fd: root.descriptor, path: path))
        }
    }

    /// The components of `directory` below the root, or nil when it is not inside the root.
    public func components(of directory: URL) -> [String]? {
        let base = url.standardizedFileURL.pathComponents
        let full = directory.standardizedFileURL.pathComponents
        guard full.count >= base.count, Array(full.prefix(base.count)) == base else { return nil }
        return Array(full.dropFirst(base.count))
    }

    /// Opens `directory` for `*at` calls: through the no-follow walk when it lies inside
    /// `root`, otherwise `mkdir -p` and an `O_NOFOLLOW` open of its last component.
    public static func openDirectory(_ directory: URL, in root: DataRoot?) throws(DataRootError) -> Int32 {
        if let root, let components = root.components(of: directory) { return try root.openDirectory(components) }
        try makeDirectory(directory)
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if fileType(directory.path) == S_IFLNK { throw .symbolicLink(path: directory.path) }
            throw .cannotCreate(path: directory.path, errno: e, holder: nearestHolder(of: directory))
        }
        return fd
    }

    /// `mkdir -p` with mode 0700 for every directory it creates (existing ones are left alone).
    /// The directory itself must not be a symbolic link.
    public static func makeDirectory(_ directory: URL, mode: mode_t = 0o700) throws(DataRootError) {
        switch fileType(directory.path) {
        case S_IFDIR?: return
        case S_IFLNK?: throw .symbolicLink(path: directory.path)
        case nil: break
        default: throw .notADirectory(path: directory.path)
        }
        try makeParents(directory, mode: mode)
    }

    private static func makeParents(_ directory: URL, mode: mode_t = 0o700) throws(DataRootError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { return }
            throw .notADirectory(path: directory.path)
        }
        let parent = directory.deletingLastPathComponent()
        if parent.path != directory.path { try makeParents(parent, mode: mode) }
        if mkdir(directory.path, mode) != 0, errno != EEXIST {
            throw .cannotCreate(path: directory.path, errno: errno, holder: nearestHolder(of: parent))
        }
        chmod(directory.path, mode)  // umask may have removed bits; 0700 is what we want anyway
    }

    /// Refuses a directory owned by another user or writable by group or others (unless
    /// `JOBRUN_ALLOW_INSECURE_ROOT=1`).
    static func check(fd: Int32, path: String) throws(DataRootError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .cannotCreate(path: path, errno: errno, holder: nil) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw .notADirectory(path: path) }
        if allowsInsecure { return }
        if st.st_uid != geteuid() {
            throw .insecure(path: path, reason: "it is owned by \(userName(st.st_uid)), not by \(userName(geteuid())) who runs jobrun")
        }
        if st.st_mode & 0o022 != 0 {
            throw .insecure(
                path: path,
                reason:
                    "it is writable by \(st.st_mode & 0o020 != 0 ? "its group" : "others")\(st.st_mode & 0o022 == 0o022 ? " and others" : "") (mode \(octal(st.st_mode & 0o7777)))"
            )
        }
    }

    static var allowsInsecure: Bool {
        guard let value = getenv(allowInsecureVariable) else { return false }
        return String(cString: value) == "1"
    }

    /// "`/srv/root` is owned by alice (uid 1000) with mode 0755".
    static func holder(fd: Int32, path: String) -> String? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return "\(path) is owned by \(userName(st.st_uid)) with mode \(octal(st.st_mode & 0o7777))"
    }

    /// The owner and mode of the nearest existing directory at or above `url`.
    static func nearestHolder(of url: URL) -> String? {
        var current = url
        while true {
            var st = stat()
            if stat(current.path, &st) == 0 {
                return "\(current.path) is owned by \(userName(st.st_uid)) with mode \(octal(st.st_mode & 0o7777))"
            }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { return nil }
            current = parent
        }
    }

    static func fileType(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    static func userName(_ uid: uid_t) -> String {
        if let pw = getpwuid(uid), let name = pw.pointee.pw_name { return "\(String(cString: name)) (uid \(uid))" }
        return "uid \(uid)"
    }

    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// Paths of one account inside the data root (`account-<id>/`).
public struct AccountPaths: Sendable, Hashable {
    public let directory: URL
    /// `config.yaml`: datacenter base URLs, CDN policy, credentials file path.
    public var config: URL { directory.appendingPathComponent("config.yaml") }
    /// `postbox/`.
    public var postbox: URL { directory.appendingPathComponent("postbox", isDirectory: true) }
    /// `postbox/db/`: Postbox SQLite (WAL).
    public var postboxDatabase: URL { postbox.appendingPathComponent("db", isDirectory: true) }
    /// `postbox/db/db.sqlite`: the Postbox database file.
    public var postboxFile: URL { postboxDatabase.appendingPathComponent(Postbox.databaseFileName) }
    /// `postbox/media/`: MediaBox.
    public var media: URL { postbox.appendingPathComponent("media", isDirectory: true) }
    /// `uploads/`: staged files of the upload queue.
    public var uploads: URL { directory.appendingPathComponent("uploads", isDirectory: true) }

    /// The data root holding this account.
    public var root: DataRoot { DataRoot(url: directory.deletingLastPathComponent()) }

    /// Creates the account's directories (0700) through the root's no-follow walk.
    public func createDirectories() throws(DataRootError) {
        _ = try root.directory([directory.lastPathComponent, "postbox", "db"])
        _ = try root.directory([directory.lastPathComponent, "postbox", "media"])
    }

    /// `postbox/media/`, held open beneath the root (created 0700 when `create`): what MediaBox
    /// is given, so it reaches nothing outside it.
    public func mediaDirectory(create: Bool) throws(DataRootError) -> ConfinedDirectory {
        try root.directory([directory.lastPathComponent, "postbox", "media"], create: create)
    }

    /// `uploads/`, held open beneath the root (created 0700 when `create`).
    public func uploadsDirectory(create: Bool) throws(DataRootError) -> ConfinedDirectory {
        try root.directory([directory.lastPathComponent, "uploads"], create: create)
    }
}
