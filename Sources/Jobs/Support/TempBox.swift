import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Per-launch scratch space: `<root>/temp/<process>/<launch-id>/`, removed by `close()` (or when
/// the value is released), and swept by the next launch if the owner died.
///
/// Ownership is an `flock` held on `<launch-id>/.owner` for the life of the process, not a pid
/// check, so pid reuse cannot keep a dead launch's directory alive or get a live one removed:
/// a sweeper that can take the lock knows the owner is gone.
///
/// Every removal works relative to directory descriptors opened without following links
/// (`openat` with `O_NOFOLLOW`, `unlinkat`): a symbolic link planted in `temp/` is refused or
/// removed as a link, and nothing outside the data root is ever deleted through one.
public final class TempBox: @unchecked Sendable {
    public let process: String
    /// `<pid>-<random>`: unique per launch, readable in `ls`.
    public let launchID: String
    public let directory: URL
    private let lock = NSLock()
    private var ownerFD: Int32
    /// `temp/<process>/`, opened without following links; removal of the box goes through it.
    private var parentFD: Int32
    private var counter = 0
    private static let ownerFile = ".owner"
    /// The owner file while it is being created, before it is locked and renamed to `ownerFile`.
    private static let newOwnerFile = ".owner.new"

    /// Creates this launch's directory (0700) and sweeps stale ones of the same process type.
    public init(root: DataRoot, process: String, sweep: Bool = true) throws {
        self.process = process
        let parent = root.temp(process: process)
        parentFD = try DataRoot.openDirectory(parent, in: root)
        if sweep { _ = Self.sweepStale(parentFD: parentFD, parentPath: parent.path) }
        launchID = "\(getpid())-\(UInt32.random(in: 0...UInt32.max).hexPadded)"
        directory = parent.appendingPathComponent(launchID, isDirectory: true)
        ownerFD = -1
        guard mkdirat(parentFD, launchID, 0o700) == 0 else {
            let e = errno
            Foundation.close(parentFD)
            throw DataRootError.cannotCreate(path: directory.path, errno: e, holder: nil)
        }
        // The owner file is locked under another name and only then renamed into place: a
        // sweeper starting at the same moment finds no `.owner` (a young box, left alone) or a
        // locked one, never an unlocked one it would take for a dead launch's and remove.
        let boxFD = openat(parentFD, launchID, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
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
            ownerFD = -1
            _ = Self.removeTree(parentFD: parentFD, name: launchID)
            Foundation.close(parentFD)
            throw DataRootError.cannotCreate(path: directory.appendingPathComponent(Self.ownerFile).path, errno: failure, holder: nil)
        }
    }

    deinit { close() }

    /// A fresh path inside the box (not created), e.g. for a download or an upload part.
    public func makePath(prefix: String = "tmp", suffix: String = "") -> URL {
        lock.lock()
        counter += 1
        let n = counter
        lock.unlock()
        return directory.appendingPathComponent("\(prefix)-\(n)\(suffix)")
    }

    /// Removes the directory and releases the lock. Idempotent.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard ownerFD >= 0 else { return }
        _ = Self.removeTree(parentFD: parentFD, name: launchID)
        Foundation.close(ownerFD)
        Foundation.close(parentFD)
        ownerFD = -1
        parentFD = -1
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
        for name in entries(of: parentFD) {
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
        for name in entries(of: tempFD) {
            let fd = openat(tempFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            removed += sweepStale(parentFD: fd, parentPath: root.temp(process: name).path)
            Foundation.close(fd)
        }
        return removed
    }

    /// The names in the directory `fd` (without `.` and `..`).
    static func entries(of fd: Int32) -> [String] {
        let dup = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dup >= 0, let dir = fdopendir(dup) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `name` under `parentFD`: a directory recursively through descriptors, anything
    /// else (a symbolic link included) as the entry itself. True if it is gone.
    @discardableResult
    static func removeTree(parentFD: Int32, name: String, depth: Int = 0) -> Bool {
        if unlinkat(parentFD, name, 0) == 0 { return true }
        guard errno == EISDIR || errno == EPERM, depth < 64 else { return errno == ENOENT }
        let fd = openat(parentFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        for child in entries(of: fd) { removeTree(parentFD: fd, name: child, depth: depth + 1) }
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
