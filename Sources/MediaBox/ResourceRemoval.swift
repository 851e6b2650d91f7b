import ConfinedFiles
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
        /// The name is not a plain file of the store (a link, a FIFO, a linked folder on the
        /// way): left alone, and the run says so.
        case refused(ConfinedFileError)
    }

    /// Removes a resource's complete file or, when it has none, the partial file an entry may
    /// stand for (a prefix fetched on purpose), whose range record goes with it.
    static func remove(_ paths: ResourceStorePaths, in media: ConfinedDirectory, dryRun: Bool) -> Outcome {
        let outcome = remove(paths.relativeComplete, in: media, dryRun: dryRun)
        guard outcome == .missing else { return outcome }
        let partial = remove(paths.relativePartial, in: media, dryRun: dryRun)
        if case .removed = partial, !dryRun {
            _ = try? PosixFile.unlinkIfExists(paths.relativeWants, in: media)
        }
        return partial
    }

    /// The same for any file of a resource (a complete file, or an abandoned partial one),
    /// named relative to `media`. A link, FIFO or device at the name (or a linked folder on the
    /// way) is refused (`.refused`), never followed; nothing outside `media` is removed.
    static func remove(_ relative: String, in media: ConfinedDirectory, dryRun: Bool) -> Outcome {
        let fd: Int32
        do {
            guard let opened = try PosixFile.openIfExists(relative, in: media, .read) else { return .missing }
            fd = opened
        } catch {
            if case .system(_, _, let code) = error { return .failed(errno: code) }
            return .refused(error)
        }
        defer { close(fd) }
        guard ResourceLock.tryLock(fd, .exclusive) else { return .locked }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failed(errno: errno) }
        do {
            // The name must still be the locked file; reaching it again checks every folder on
            // the way (a shard others may write is refused, not skipped).
            guard let current = try media.status(relative), current.st_dev == st.st_dev, current.st_ino == st.st_ino else { return .missing }
            if dryRun { return .removed(bytes: Int64(st.st_size)) }
            if try !media.removeFile(relative) { return .missing }
        } catch {
            if case .system(_, _, let code) = error { return code == ENOENT ? .missing : .failed(errno: code) }
            return .refused(error)
        }
        return .removed(bytes: Int64(st.st_size))
    }
}
