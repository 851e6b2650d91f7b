import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// Hard links, unnamed files and durability below a `ConfinedDirectory`: the operations a
/// store needs to make a file appear under its final name atomically, each resolved beneath the
/// directory like every other name.
extension ConfinedDirectory {
    /// `O_TMPFILE`, from the kernel headers (`__O_TMPFILE | O_DIRECTORY`); Glibc's module does
    /// not export it.
    static let tmpFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    /// Gives the file `from` the second name `to` (`linkat`, never following a link at either
    /// name). False when something is already at `to`.
    public func link(_ from: String, to: String) throws(ConfinedFileError) -> Bool {
        let (source, sourceName) = try split(from)
        let (target, targetName) = try split(to)
        if linkat(source.descriptor, sourceName, target.descriptor, targetName, 0) == 0 { return true }
        if errno == EEXIST { return false }
        throw failure(errno, relative: from, operation: "link to \(Printable.path(display(to)))")
    }

    /// A new file with no name in this directory (`O_TMPFILE`, mode 0600), or nil when the file
    /// system cannot make one (NFS, some FUSE and overlay mounts). Give it a name with
    /// `link(descriptor:to:)`. The caller closes the descriptor.
    public func createUnnamedFile(mode: mode_t = 0o600) throws(ConfinedFileError) -> Int32? {
        while true {
            let fd = openat(descriptor, ".", Self.tmpFileFlag | O_RDWR | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            switch errno {
            case EINTR: continue
            case EOPNOTSUPP, EISDIR, EINVAL: return nil
            default: throw .system(path: path, operation: "create an unnamed file in", errno: errno)
            }
        }
    }

    /// Names the open file `fd` (an unnamed file of this directory) `relative`. False when
    /// something is already there. Through `/proc/self/fd`, which needs no privilege, unlike
    /// `AT_EMPTY_PATH`; the new name is resolved beneath this directory.
    public func link(descriptor fd: Int32, to relative: String) throws(ConfinedFileError) -> Bool {
        let (target, name) = try split(relative)
        if linkat(AT_FDCWD, "/proc/self/fd/\(fd)", target.descriptor, name, AT_SYMLINK_FOLLOW) == 0 { return true }
        if errno == EEXIST { return false }
        throw failure(errno, relative: relative, operation: "link")
    }

    /// Makes this directory's entries durable (`fsync` of its descriptor).
    public func sync() throws(ConfinedFileError) {
        if fsync(descriptor) != 0 { throw .system(path: path, operation: "fsync", errno: errno) }
    }

    /// Opens `relative` like `openFile`, but returns nil when nothing is there.
    public func openFileIfExists(_ relative: String, _ access: FileAccess) throws(ConfinedFileError) -> Int32? {
        do { return try openFile(relative, access) } catch {
            if case .system(_, _, ENOENT) = error { return nil }
            throw error
        }
    }

    /// The names in this directory with their types (from `readdir`; `.unknown` where the file
    /// system does not say), streaming, without `.` and `..`.
    public func forEachEntry(_ body: (String, FileKind) throws -> Void) throws {
        let copy = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0 else { throw ConfinedFileError.system(path: path, operation: "list", errno: errno) }
        guard let dir = fdopendir(copy) else {
            let e = errno
            close(copy)
            throw ConfinedFileError.system(path: path, operation: "list", errno: e)
        }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let kind: FileKind
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_REG): kind = .regular
            case Int32(DT_DIR): kind = .directory
            case Int32(DT_LNK): kind = .symbolicLink
            case Int32(DT_FIFO): kind = .fifo
            case Int32(DT_SOCK): kind = .socket
            case Int32(DT_CHR): kind = .characterDevice
            case Int32(DT_BLK): kind = .blockDevice
            default: kind = .unknown
            }
            try body(name, kind)
        }
    }

    /// Checks what is at `relative` without opening it: a regular file (one link when `writes`)
    /// that passes the policy. False when nothing is there; throws what `openFile` would.
    public func checkFile(_ relative: String, writes: Bool) throws(ConfinedFileError) -> Bool {
        let shown = display(relative)
        let st: stat
        do {
            guard let found = try status(relative) else { return false }
            st = found
        } catch {
            if case .system(_, _, ENOENT) = error { return false }
            throw error
        }
        let kind = FileKind(mode: st.st_mode)
        if kind == .symbolicLink { throw .symbolicLink(path: shown) }
        guard kind == .regular else { throw .wrongType(path: shown, found: kind, expected: .regular) }
        if writes, st.st_nlink > 1 { throw .hardLinked(path: shown, links: UInt64(st.st_nlink)) }
        try policy.check(st, path: shown)
        return true
    }

    /// Whether the open `fd` is still the file named `relative` (same device and inode): a
    /// file renamed or removed since it was opened is no longer the one that name means.
    public func isSameFile(_ fd: Int32, as relative: String) -> Bool {
        var a = stat()
        guard fstat(fd, &a) == 0, let b = try? status(relative) else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }
}
