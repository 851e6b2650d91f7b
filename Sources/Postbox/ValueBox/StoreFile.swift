import ConfinedFiles

#if canImport(Glibc)
    import Glibc
#endif

/// Opens a store's files (the database and the `-wal`, `-shm` and `-journal` beside it) the one
/// way files below a directory are opened: by `ConfinedDirectory`, in the folder that holds the
/// database, so a symbolic link, a FIFO or device, a hard-linked file or a file writable by
/// others is refused with an error naming it, and never opened.
enum StoreFile {
    /// The folder holding `path` and the file's name in it.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// The descriptor of `path` opened for `access`, or nil when the file does not exist and
    /// `access` does not create it. A file that may not be written (a read-only file system, a
    /// file without write permission) is opened for reading instead, as SQLite's own VFS does:
    /// a reader of a read-only mount still reads the `-wal` through its `-shm`. The caller closes
    /// the descriptor.
    static func open(_ path: String, _ access: FileAccess, policy: ConfinementPolicy) throws(PostboxError) -> Int32? {
        let (directory, name) = split(path)
        do {
            let folder = try ConfinedDirectory.open(path: directory, policy: policy)
            do {
                return try folder.openFile(name, access)
            } catch .system(_, _, let code) where access.writes && (code == EROFS || code == EACCES) {
                return try folder.openFile(name, .read)
            }
        } catch {
            if case .system(_, _, let code) = error, code == ENOENT { return nil }
            throw PostboxError.unsafeFile(path: error.path, reason: error.description)
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        var got = 0
        while got < buffer.count {
            let n = pread(fd, buffer.baseAddress! + got, buffer.count - got, off_t(offset) + off_t(got))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            got += n
        }
        return got
    }
}
