import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Per-launch scratch space: `<root>/temp/<process>/<launch-id>/`, created on first use,
/// removed by `close()` (or when the value is released), and swept by a later launch if the
/// owner died.
///
/// Nothing is created until `directory()` or `makePath` is called: a run that needs no scratch
/// space (a cron run with nothing to do) creates and removes no folder. The first use sweeps
/// stale folders of the same process type, then creates this launch's.
///
/// Ownership is an `flock` held on `<launch-id>/.owner` for the life of the process, not a pid
/// check, so pid reuse cannot keep a dead launch's directory alive or get a live one removed:
/// a sweeper that can take the lock knows the owner is gone.
///
/// Every removal works relative to directory descriptors opened without following links
/// (`openat` with `O_NOFOLLOW`, `unlinkat`): a symbolic link planted in `temp/` is refused or
/// removed as a link, and nothing outside the data root is ever deleted through one.
public final class TempBox: @unchecked Sendable {
    public let root: DataRoot
    public let process: String
    /// `<pid>-<random>`: unique per launch, readable in `ls`.
    public let launchID: String
    private let lock = NSLock()
    private var state = State.notCreated
    private var counter = 0
    private static let ownerFile = ".owner"
    /// The owner file while it is being created, before it is locked and renamed to `ownerFile`.
    private static let newOwnerFile = ".owner.new"

    private enum State {
        case notCreated
        /// `parentFD` is `temp/<process>/`, opened without following links; removal of the box
        /// goes through it. `ownerFD` holds the owner lock.
        case created(parentFD: Int32, ownerFD: Int32)
        case closed
    }

    /// Names this launch's box; nothing is created yet.
    public init(root: DataRoot, process: String) {
        self.root = root
        self.process = process
        launchID = "\(getpid())-\(UInt32.random(in: 0...UInt32.max).hexPadded)"
    }

    deinit { close() }

    /// The box's directory, created (0700) on the first call after sweeping stale ones of the
    /// same process type. Throws what the data root refuses (a planted link, no permission).
    public func directory() throws -> URL {
        lock.lock()
        defer { lock.unlock() }
        let parent = root.temp(process: process)
        let directory = parent.appendingPathComponent(launchID, isDirectory: true)
        switch state {
        case .created: return directory
        case .closed: throw DataRootError.cannotCreate(path: directory.path, errno: EBADF, holder: nil)
        case .notCreated: break
        }
        let parentFD = try DataRoot.openDirectory(parent, in: root)
        _ = Self.sweepStale(parentFD: parentFD, parentPath: parent.path)
        guard mkdirat(parentFD, launchID, 0o700) == 0 else {
            let e = errno
            Foundation.close(parentFD)
            throw DataRootError.cannotCreate(path: directory.path, errno: e, holder: nil)
        }
        // The owner file is locked under another name and only then renamed into place: a
        // sweeper starting at the same moment finds no `.owner` (a young box, left alone) or a
        // locked one, never an unlocked one it would take for a dead launch's and remove.
        let boxFD = openat(parentFD, launchID, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        var ownerFD: Int32 = -1
        var failure: Int32 = 0
        if boxFD >= 0 {
            ownerFD = openat(boxFD, Self.newOwnerFile, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if ownerFD < 0 || flock(ownerFD, LOCK_EX | LOCK_NB) != 0 {
                failure = errno
            } else {
                let pid = "\(getpid())\n"
                _ = pid.withCString { Foundation.write(ownerFD, $0, strlen($0)) }
                if renameat(boxFD, Self.newOwnerFile, boxFD, Self.ownerFile) != 0 { failure = errno }
            }
            Foundation.close(boxFD)
        } else {
            failure = errno
        }
        guard failure == 0 else {
            if ownerFD >= 0 { Foundation.close(ownerFD) }
            _ = Self.removeTree(parentFD: parentFD, name: launchID)
            Foundation.close(parentFD)
            throw DataRootError.cannotCreate(path: directory.appendingPathComponent(Self.ownerFile).path, errno: failure, holder: nil)
        }
        state = .created(parentFD: parentFD, ownerFD: ownerFD)
        return directory
    }

    /// A fresh path inside the box (not created), e.g. for a download or an upload part.
    public func makePath(prefix: String = "tmp", suffix: String = "") throws -> URL {
        let directory = try directory()
        lock.lock()
        counter += 1
        let n = counter
        lock.unlock()
        return directory.appendingPathComponent("\(prefix)-\(n)\(suffix)")
    }

    /// Removes the directory (if it was created) and releases the lock. Idempotent.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        if case .created(let parentFD, let ownerFD) = state {
            _ = Self.removeTree(parentFD: parentFD, name: launchID)
            Foundation.close(ownerFD)
            Foundation.close(parentFD)
        }
        state = .closed
    }

    /// Removes launch directories under `parent` whose owner lock is not held (owner dead), and
    /// leftovers without an owner file. Returns what was removed. A `parent` that is a symbolic
    /// link is not swept.
    @discardableResult
    public static func sweepStale(in parent: URL) -> [URL] {
        let fd = open(parent.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { Foundation.close(fd) }
        return sweepStale(parentFD: fd, parentPath: parent.path)
    }

    static func sweepStale(parentFD: Int32, parentPath: String) -> [URL] {
        var removed: [URL] = []
        for name in ConfinedDirectory.entries(of: parentFD) {
            let url = URL(fileURLWithPath: parentPath).appendingPathComponent(name, isDirectory: true)
            var st = stat()
            guard fstatat(parentFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                // Not a launch directory (a planted link or file): remove the entry itself, once old.
                if Date().timeIntervalSince1970 - Double(st.st_mtim.tv_sec) >= 60, unlinkat(parentFD, name, 0) == 0 { removed.append(url) }
                continue
            }
            let boxFD = openat(parentFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard boxFD >= 0 else { continue }
            let fd = openat(boxFD, ownerFile, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            Foundation.close(boxFD)
            if fd < 0 {
                // No owner file: a half-created or foreign entry. Leave very young ones alone.
                if Date().timeIntervalSince1970 - Double(st.st_mtim.tv_sec) < 60 { continue }
            } else if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                Foundation.close(fd)  // owner alive
                continue
            }
            if removeTree(parentFD: parentFD, name: name) { removed.append(url) }
            if fd >= 0 { Foundation.close(fd) }
        }
        return removed
    }

    /// Sweeps every process type's temp directory under the root.
    @discardableResult
    public static func sweepStale(root: DataRoot) -> [URL] {
        guard let tempFD = try? root.openDirectory(["temp"], create: false) else { return [] }
        defer { Foundation.close(tempFD) }
        var removed: [URL] = []
        for name in ConfinedDirectory.entries(of: tempFD) {
            let fd = openat(tempFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            removed += sweepStale(parentFD: fd, parentPath: root.temp(process: name).path)
            Foundation.close(fd)
        }
        return removed
    }

    /// Removes `name` under `parentFD`: a directory recursively through descriptors, anything
    /// else (a symbolic link included) as the entry itself. True if it is gone.
    @discardableResult
    static func removeTree(parentFD: Int32, name: String, depth: Int = 0) -> Bool {
        if unlinkat(parentFD, name, 0) == 0 { return true }
        guard errno == EISDIR || errno == EPERM, depth < 64 else { return errno == ENOENT }
        let fd = openat(parentFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        for child in ConfinedDirectory.entries(of: fd) { removeTree(parentFD: fd, name: child, depth: depth + 1) }
        Foundation.close(fd)
        return unlinkat(parentFD, name, AT_REMOVEDIR) == 0 || errno == ENOENT
    }
}

private extension UInt32 {
    var hexPadded: String {
        let hex = String(self, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
