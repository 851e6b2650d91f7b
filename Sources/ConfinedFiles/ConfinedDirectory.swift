import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// A directory held open by its descriptor, and the one way to reach anything below it.
///
/// Every name given to it is resolved beneath the descriptor by the kernel (`openat2` with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`; a component-by-component
/// walk with `O_NOFOLLOW` where the kernel predates it): a symbolic link at any component is
/// refused, never followed, and nothing outside the directory is read, written, created or
/// removed. Files are opened without blocking and checked by `fstat` on the descriptor that
/// was opened, so a FIFO, socket or device where a file belongs is refused at once, and a file
/// with several hard links is never written. What was checked is what is used: callers read
/// and write through the returned descriptor, never by name again.
///
/// The descriptor is closed when the value is released.
public final class ConfinedDirectory: @unchecked Sendable {
    /// The open directory (`O_RDONLY | O_DIRECTORY`).
    public let descriptor: Int32
    /// The directory's path, for messages and for APIs that need a name (SQLite).
    public let path: String
    public let policy: ConfinementPolicy

    /// Takes ownership of `descriptor`, an open directory at `path`.
    public init(adopting descriptor: Int32, path: String, policy: ConfinementPolicy) {
        self.descriptor = descriptor
        self.path = path
        self.policy = policy
    }

    deinit { Glibc.close(descriptor) }

    /// This same directory under `policy`: a second descriptor of it, so nothing is resolved
    /// again. For a caller that knowingly relaxes or tightens the checks of what it opens below.
    public func under(_ policy: ConfinementPolicy) throws(ConfinedFileError) -> ConfinedDirectory {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw .system(path: path, operation: "duplicate the directory's descriptor", errno: errno) }
        return ConfinedDirectory(adopting: copy, path: path, policy: policy)
    }

    /// Opens the directory at `path`, the anchor the operator chose (it may itself be reached
    /// through a symbolic link: choosing it is the operator's decision). With `create`, missing
    /// folders on the way are made 0700. The anchor must pass `policy`.
    public static func open(path: String, create: Bool = false, policy: ConfinementPolicy = ConfinementPolicy()) throws(ConfinedFileError) -> ConfinedDirectory
    {
        var fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0, errno == ENOENT, create {
            try makeParents(path)
            fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard fd >= 0 else {
            let e = errno
            var st = stat()
            if e == ENOTDIR, fstatat(AT_FDCWD, path, &st, 0) == 0 { throw .wrongType(path: path, found: FileKind(mode: st.st_mode), expected: .directory) }
            throw .system(path: path, operation: "open the directory", errno: e)
        }
        let directory = ConfinedDirectory(adopting: fd, path: path, policy: policy)
        try directory.checkSelf()
        return directory
    }

    /// The directory `relative` below this one, walked one component at a time without
    /// following links; with `create`, missing components are made with `mode`. Each
    /// component must pass the policy.
    public func directory(_ relative: String, create: Bool = false, mode: mode_t = 0o700) throws(ConfinedFileError) -> ConfinedDirectory {
        var current = self
        for name in try Self.components(relative, below: path) {
            current = try current.child(name, create: create, mode: mode)
        }
        return current === self ? try child(".", create: false, mode: mode) : current
    }

    /// Opens the regular file `relative` below this directory and returns its descriptor (the
    /// caller closes it). New files get `mode`. Refuses a link anywhere on the way, anything but
    /// a regular file, a file with several hard links when `access` writes, and a file that
    /// fails the policy; `replaceContents` truncates only after those checks.
    public func openFile(_ relative: String, _ access: FileAccess, mode: mode_t = 0o600) throws(ConfinedFileError) -> Int32 {
        let shown = display(relative)
        let names = try Self.components(relative, below: path)
        guard !names.isEmpty else { throw .wrongType(path: shown, found: .directory, expected: .regular) }
        let flags = access.flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
        // openat2 refuses a mode without O_CREAT (EINVAL), where openat ignores it.
        let createMode = flags & O_CREAT != 0 ? UInt64(mode) : 0
        var fd = jobrun_openat2(descriptor, relative, UInt64(UInt32(bitPattern: flags)), createMode, Self.resolve)
        if fd < 0, errno == ENOSYS {
            let parent = try directory(names.dropLast().joined(separator: "/"))
            fd = openat(parent.descriptor, names.last!, flags, mode)
        }
        guard fd >= 0 else { throw failure(errno, relative: relative, operation: "open") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .system(path: shown, operation: "inspect", errno: e)
        }
        do throws(ConfinedFileError) {
            let kind = FileKind(mode: st.st_mode)
            guard kind == .regular else { throw ConfinedFileError.wrongType(path: shown, found: kind, expected: .regular) }
            if access.writes, st.st_nlink > 1 { throw ConfinedFileError.hardLinked(path: shown, links: UInt64(st.st_nlink)) }
            try policy.check(st, path: shown)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            if access.truncates, ftruncate(fd, 0) != 0 { throw ConfinedFileError.system(path: shown, operation: "truncate", errno: errno) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// What is at `relative` (not following a final symbolic link), or nil when nothing is.
    public func status(_ relative: String) throws(ConfinedFileError) -> stat? {
        let (parent, name) = try split(relative)
        var st = stat()
        if fstatat(parent.descriptor, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { return st }
        if errno == ENOENT { return nil }
        throw .system(path: display(relative), operation: "inspect", errno: errno)
    }

    /// Removes the file (or link, FIFO…) at `relative`; true when something was removed. A
    /// link is removed itself; what it points to is never touched.
    @discardableResult
    public func removeFile(_ relative: String) throws(ConfinedFileError) -> Bool {
        let (parent, name) = try split(relative)
        if unlinkat(parent.descriptor, name, 0) == 0 { return true }
        if errno == ENOENT { return false }
        throw .system(path: display(relative), operation: "remove", errno: errno)
    }

    /// Renames `from` to `to`, both below this directory, replacing what is at `to`.
    public func rename(_ from: String, to: String) throws(ConfinedFileError) {
        let (source, sourceName) = try split(from)
        let (target, targetName) = try split(to)
        if renameat(source.descriptor, sourceName, target.descriptor, targetName) != 0 {
            throw .system(path: display(from), operation: "rename to \(Printable.path(to))", errno: errno)
        }
    }

    /// The names in this directory, without `.` and `..`.
    public func entries() -> [String] { Self.entries(of: descriptor) }

    /// The names in the open directory `descriptor`, without `.` and `..` (the descriptor stays
    /// open and its position unchanged: the listing reads a copy).
    public static func entries(of descriptor: Int32) -> [String] {
        let copy = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let dir = fdopendir(copy) else { return [] }
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

    /// `path/relative`, the path messages name.
    public func display(_ relative: String) -> String {
        relative.isEmpty || relative == "." ? path : (path.hasSuffix("/") ? path + relative : path + "/" + relative)
    }

    // MARK: - Walking

    private static let resolve = UInt64(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

    /// The components of a relative name; `..`, an absolute name and empty components are refused.
    static func components(_ relative: String, below base: String) throws(ConfinedFileError) -> [String] {
        if relative.hasPrefix("/") { throw .outside(path: relative) }
        var names: [String] = []
        for part in relative.split(separator: "/", omittingEmptySubsequences: true) where part != "." {
            if part == ".." || part.contains("\0") { throw .outside(path: base + "/" + relative) }
            names.append(String(part))
        }
        return names
    }

    /// The directory holding `relative`'s last component, and that component.
    func split(_ relative: String) throws(ConfinedFileError) -> (ConfinedDirectory, String) {
        let names = try Self.components(relative, below: path)
        guard let last = names.last else { throw .outside(path: display(relative)) }
        let parent = names.count == 1 ? self : try directory(names.dropLast().joined(separator: "/"))
        return (parent, last)
    }

    private func child(_ name: String, create: Bool, mode: mode_t) throws(ConfinedFileError) -> ConfinedDirectory {
        let childPath = display(name)
        var created = false
        var fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0, errno == ENOENT, create {
            if mkdirat(descriptor, name, mode) == 0 {
                created = true
            } else if errno != EEXIST {
                throw .system(path: childPath, operation: "create the directory", errno: errno)
            }
            fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard fd >= 0 else { throw failure(errno, relative: name, operation: "open the directory", expected: .directory) }
        if created { fchmod(fd, mode) }  // the umask may have removed bits
        let directory = ConfinedDirectory(adopting: fd, path: name == "." ? path : childPath, policy: policy)
        try directory.checkSelf()
        return directory
    }

    private func checkSelf() throws(ConfinedFileError) {
        var st = stat()
        guard fstat(descriptor, &st) == 0 else { throw .system(path: path, operation: "inspect", errno: errno) }
        let kind = FileKind(mode: st.st_mode)
        guard kind == .directory else { throw .wrongType(path: path, found: kind, expected: .directory) }
        try policy.check(st, path: path)
    }

    /// Turns a failed open into the error that says what is there: a link, a FIFO, a file.
    func failure(_ code: Int32, relative: String, operation: String, expected: FileKind = .regular) -> ConfinedFileError {
        let shown = display(relative)
        switch code {
        case ELOOP: return .symbolicLink(path: shown)
        case EXDEV: return .outside(path: shown)
        case ENOTDIR, ENXIO, EISDIR:
            if let st = try? status(relative) {
                let kind = FileKind(mode: st.st_mode)
                if kind == .symbolicLink { return .symbolicLink(path: shown) }
                if kind != expected { return .wrongType(path: shown, found: kind, expected: expected) }
            }
            return .system(path: shown, operation: operation, errno: code)
        default:
            return .system(path: shown, operation: operation, errno: code)
        }
    }

    /// `mkdir -p` with mode 0700 for every directory it creates.
    private static func makeParents(_ path: String) throws(ConfinedFileError) {
        var st = stat()
        if fstatat(AT_FDCWD, path, &st, 0) == 0 { return }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty, parent != path { try makeParents(parent) }
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw .system(path: path, operation: "create the directory", errno: errno) }
    }
}
