import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Thin throwing wrappers over the system calls MediaBox uses (open, pwrite, fsync, flock…),
/// so every failure carries its path and errno.
enum PosixFile {
    static let directoryMode: mode_t = 0o700
    static let fileMode: mode_t = 0o600

    static func fail(_ path: String, _ op: String) -> MediaBoxError { .io(path: path, operation: op, errno: errno) }

    static func open(_ path: String, _ flags: Int32, mode: mode_t = fileMode) throws -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw fail(path, "open")
        }
    }

    /// Like `open`, but nil when the file does not exist.
    static func openIfExists(_ path: String, _ flags: Int32) throws -> Int32? {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, fileMode)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            if errno == ENOENT { return nil }
            throw fail(path, "open")
        }
    }

    static func pwriteAll(_ fd: Int32, _ data: UnsafeRawBufferPointer, offset: Int64, path: String) throws {
        var done = 0
        while done < data.count {
            let n = Glibc.pwrite(fd, data.baseAddress! + done, data.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw fail(path, "pwrite")
            }
            done += n
        }
    }

    static func preadAll(_ fd: Int32, count: Int, offset: Int64, path: String) throws -> Data {
        var data = Data(count: count)
        var done = 0
        try data.withUnsafeMutableBytes { raw in
            while done < count {
                let n = Glibc.pread(fd, raw.baseAddress! + done, count - done, off_t(offset + Int64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw fail(path, "pread")
                }
                if n == 0 { break }
                done += n
            }
        }
        data.count = done
        return data
    }

    static func fsync(_ fd: Int32, path: String) throws {
        if Glibc.fsync(fd) != 0 { throw fail(path, "fsync") }
    }

    static func fsyncDirectory(_ path: String) throws {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { Glibc.close(fd) }
        try fsync(fd, path: path)
    }

    /// `fstat`; throws on failure.
    static func fstat(_ fd: Int32, path: String) throws -> stat {
        var st = stat()
        if Glibc.fstat(fd, &st) != 0 { throw fail(path, "fstat") }
        return st
    }

    /// `lstat`, or nil when the path does not exist.
    static func lstat(_ path: String) throws -> stat? {
        var st = stat()
        if Glibc.lstat(path, &st) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw fail(path, "lstat")
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return Glibc.lstat(path, &st) == 0
    }

    /// `unlink`, ignoring a file that is already gone. Returns whether this call removed it.
    @discardableResult
    static func unlinkIfExists(_ path: String) throws -> Bool {
        if Glibc.unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw fail(path, "unlink")
    }

    /// Creates `path` and missing parents with mode 0700 (existing directories are left alone).
    static func makeDirectory(_ path: String) throws {
        if Glibc.mkdir(path, directoryMode) == 0 || errno == EEXIST { return }
        if errno == ENOENT {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty && parent != path {
                try makeDirectory(parent)
                if Glibc.mkdir(path, directoryMode) == 0 || errno == EEXIST { return }
            }
        }
        throw fail(path, "mkdir")
    }

    /// Creates the directory `path` (0700) if it is missing; when it creates it, fsyncs the parent
    /// so the new directory's entry is as durable as the files later synced inside it.
    static func makeDirectoryDurably(_ path: String) throws {
        if Glibc.mkdir(path, directoryMode) == 0 {
            try fsyncDirectory((path as NSString).deletingLastPathComponent)
            return
        }
        if errno == EEXIST { return }
        throw fail(path, "mkdir")
    }

    /// Whether `fd` still refers to the file at `path` (same device and inode): a file renamed or
    /// unlinked since it was opened is no longer "the" resource.
    static func isSameFile(_ fd: Int32, path: String) -> Bool {
        var a = stat(), b = stat()
        guard Glibc.fstat(fd, &a) == 0, Glibc.lstat(path, &b) == 0 else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// Lists a directory's entry names, streaming (`readdir`), skipping `.` and `..`.
    static func forEachEntry(in directory: String, _ body: (String, UInt8) throws -> Void) throws {
        guard let dir = opendir(directory) else {
            if errno == ENOENT { return }
            throw fail(directory, "opendir")
        }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let (name, type) = withUnsafePointer(to: entry.pointee.d_name) { ptr in
                ptr.withMemoryRebound(to: CChar.self, capacity: 256) { (String(cString: $0), entry.pointee.d_type) }
            }
            if name == "." || name == ".." { continue }
            try body(name, type)
        }
    }

    /// `syncfs(2)` (one sync for the whole file system, Linux), looked up at run time because
    /// Glibc's Swift module does not export it; falls back to an fsync per file.
    static func syncFileSystem(containing fd: Int32, files: [Int32], path: String) throws {
        if try syncWholeFileSystem(containing: fd, path: path) { return }
        for f in files { try fsync(f, path: path) }
    }

    /// Makes the entries of `directories` durable: one `syncfs` when there is one (it writes back
    /// every dirty directory block and inode of the file system at once), else an fsync each.
    static func syncDirectories(_ directories: Set<String>, containing fd: Int32, path: String) throws {
        if try syncWholeFileSystem(containing: fd, path: path) { return }
        for d in directories { try fsyncDirectory(d) }
    }

    /// `syncfs` of the file system holding `fd`; false when the C library has none (the caller
    /// then syncs what it wrote one by one).
    private static func syncWholeFileSystem(containing fd: Int32, path: String) throws -> Bool {
        guard let syncfs = syncfsFunction else { return false }
        if syncfs(fd) == 0 { return true }
        throw fail(path, "syncfs")
    }

    /// Starts writeback of a written range without waiting for it (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`); a hint only — durability still comes from fsync/syncfs.
    static func startWriteback(_ fd: Int32, offset: Int64, count: Int) {
        guard count > 0, let f = syncFileRangeFunction else { return }
        _ = f(fd, off_t(offset), off_t(count), 2 /* SYNC_FILE_RANGE_WRITE */)
    }

    private typealias SyncFileRange = @convention(c) (Int32, off_t, off_t, UInt32) -> Int32
    private static let syncFileRangeFunction: SyncFileRange? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
    }()

    /// Whether `syncFileSystem` syncs the whole file system (rather than only the files given).
    static var hasSyncFileSystem: Bool { syncfsFunction != nil }

    private typealias SyncFS = @convention(c) (Int32) -> Int32
    private static let syncfsFunction: SyncFS? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: SyncFS.self)
    }()
}
