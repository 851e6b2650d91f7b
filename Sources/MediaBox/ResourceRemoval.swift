import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Removing one resource file safely: take `LOCK_EX | LOCK_NB` on the file (skip it if a reader
/// or writer holds a lock), check the name still refers to the locked inode, unlink, close.
/// Used by cleanup (from several threads at once), `MediaBox.remove`, and `storeBatch` for an
/// abandoned partial file.
enum ResourceRemoval {
    enum Outcome: Equatable, Sendable {
        /// Unlinked (or would be, in a dry run); `bytes` is the size on disk.
        case removed(bytes: Int64)
        /// A lock is held: left alone.
        case locked
        /// No file: only the index row is stale.
        case missing
        /// A system call failed (the file is left).
        case failed(errno: Int32)
    }

    static func remove(_ paths: ResourceStorePaths, dryRun: Bool) -> Outcome { remove(paths.complete, dryRun: dryRun) }

    /// The same for any file of a resource (a complete file, or an abandoned partial one).
    static func remove(_ path: String, dryRun: Bool) -> Outcome {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 { return errno == ENOENT ? .missing : .failed(errno: errno) }
        defer { close(fd) }
        guard ResourceLock.tryLock(fd, .exclusive) else { return .locked }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failed(errno: errno) }
        guard PosixFile.isSameFile(fd, path: path) else { return .missing }
        if dryRun { return .removed(bytes: Int64(st.st_size)) }
        if unlink(path) != 0 { return errno == ENOENT ? .missing : .failed(errno: errno) }
        return .removed(bytes: Int64(st.st_size))
    }
}
