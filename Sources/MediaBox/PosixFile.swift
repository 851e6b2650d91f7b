import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Thin throwing wrappers over the system calls MediaBox uses (open, pwrite, fsync, flock…),
/// so every failure carries its path and errno. Every name is resolved beneath the media
/// directory's descriptor (`ConfinedDirectory`), never by a path the kernel walks from `/`.
enum PosixFile {
    static let directoryMode: mode_t = 0o700
    static let fileMode: mode_t = 0o600

    static func fail(_ path: String, _ op: String) -> MediaBoxError { .io(path: path, operation: op, errno: errno) }

    /// Opens `relative` beneath `media` (`ConfinedDirectory`: no link followed, nothing but a
    /// regular file opened, no hard-linked file written), retrying on `EINTR`.
    static func open(_ relative: String, in media: ConfinedDirectory, _ access: FileAccess) throws(ConfinedFileError) -> Int32 {
        while true {
            do { return try media.openFile(relative, access, mode: fileMode) } catch {
                if case .system(_, _, EINTR) = error { continue }
                throw error
            }
        }
    }

    /// Like `open`, but nil when the file (or its folder) does not exist.
    static func openIfExists(_ relative: String, in media: ConfinedDirectory, _ access: FileAccess) throws(ConfinedFileError) -> Int32? {
        do { return try open(relative, in: media, access) } catch {
            if case .system(_, _, let code) = error, code == ENOENT || code == ENOTDIR { return nil }
            throw error
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

    /// `fstat`; throws on failure.
    static func fstat(_ fd: Int32, path: String) throws -> stat {
        var st = stat()
        if Glibc.fstat(fd, &st) != 0 { throw fail(path, "fstat") }
        return st
    }

    /// What is at `relative` (a link itself, not its target), or nil when nothing is.
    static func lstat(_ relative: String, in media: ConfinedDirectory) throws(ConfinedFileError) -> stat? {
        do { return try media.status(relative) } catch {
            if case .system(_, _, let code) = error, code == ENOENT || code == ENOTDIR { return nil }
            throw error
        }
    }

    static func exists(_ relative: String, in media: ConfinedDirectory) -> Bool { (try? lstat(relative, in: media)) != nil }

    /// Removes the name `relative`, ignoring one already gone. Returns whether this call removed it.
    @discardableResult
    static func unlinkIfExists(_ relative: String, in media: ConfinedDirectory) throws(ConfinedFileError) -> Bool {
        do { return try media.removeFile(relative) } catch {
            if case .system(_, _, let code) = error, code == ENOTDIR || code == ENOENT { return false }
            throw error
        }
    }

    /// The directory `relative` beneath `media`, created (0700, with missing parents) when
    /// missing; with `durably`, a directory it creates has its parent synced so its entry is as
    /// durable as the files later synced inside it.
    @discardableResult
    static func makeDirectory(_ relative: String, in media: ConfinedDirectory, durably: Bool = false) throws(ConfinedFileError) -> ConfinedDirectory {
        if durably, !relative.isEmpty, (try? lstat(relative, in: media)) == nil {
            let created = try media.directory(relative, create: true, mode: directoryMode)
            let parent = (relative as NSString).deletingLastPathComponent
            try media.directory(parent).sync()
            return created
        }
        return try media.directory(relative, create: true, mode: directoryMode)
    }

    /// Whether `fd` still refers to the file at `relative` (same device and inode): a file
    /// renamed or unlinked since it was opened is no longer "the" resource.
    static func isSameFile(_ fd: Int32, _ relative: String, in media: ConfinedDirectory) -> Bool {
        media.isSameFile(fd, as: relative)
    }

    /// Lists a directory's entries with their types, streaming; nothing when it does not exist.
    /// The directory itself is reached beneath `media` without following links.
    static func forEachEntry(in relative: String, of media: ConfinedDirectory, _ body: (String, FileKind) throws -> Void) throws {
        let directory: ConfinedDirectory
        do { directory = try media.directory(relative) } catch {
            if case .system(_, _, ENOENT) = error { return }
            throw error
        }
        try directory.forEachEntry(body)
    }

    /// `syncfs(2)` (one sync for the whole file system, Linux), looked up at run time because
    /// Glibc's Swift module does not export it; falls back to an fsync per file.
    static func syncFileSystem(containing fd: Int32, files: [Int32], path: String) throws {
        if try syncWholeFileSystem(containing: fd, path: path) { return }
        for f in files { try fsync(f, path: path) }
    }

    /// Makes the entries of `directories` durable: one `syncfs` when there is one (it writes back
    /// every dirty directory block and inode of the file system at once), else an fsync each.
    static func syncDirectories(_ directories: Set<String>, in media: ConfinedDirectory, containing fd: Int32, path: String) throws {
        if try syncWholeFileSystem(containing: fd, path: path) { return }
        for d in directories { try media.directory(d).sync() }
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
