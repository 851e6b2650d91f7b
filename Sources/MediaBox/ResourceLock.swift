import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Advisory locks on a resource's own files (`flock`, which follows the inode across the
/// partial → complete link and is released by the kernel when the holder dies):
///
/// - a writer holds `LOCK_EX` on `<name>_partial` from open until after completion;
/// - a reader holds `LOCK_SH` on the complete file while reading;
/// - cleanup takes `LOCK_EX | LOCK_NB` on a victim and skips it when that fails.
///
/// `flock` locks belong to the open file description, so two opens in one process conflict
/// just as two processes do.
public enum ResourceLock {
    public enum Mode: Sendable { case shared, exclusive }

    /// Tries to take the lock without waiting: true if taken, false if another holder has it.
    public static func tryLock(_ fd: Int32, _ mode: Mode) -> Bool {
        let op = (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB
        while true {
            if flock(fd, op) == 0 { return true }
            if errno == EINTR { continue }
            return false
        }
    }

    /// Waits for the lock (blocking the calling thread). Use from threads, not async code.
    public static func lock(_ fd: Int32, _ mode: Mode, path: String) throws {
        let op = mode == .shared ? LOCK_SH : LOCK_EX
        while true {
            if flock(fd, op) == 0 { return }
            if errno == EINTR { continue }
            throw PosixFile.fail(path, "flock")
        }
    }

    public static func unlock(_ fd: Int32) { _ = flock(fd, LOCK_UN) }

    /// Whether someone (this process or another) holds a lock on the file at `path` right now:
    /// opens it, tries `LOCK_EX | LOCK_NB`, and lets go at once. A missing file is not locked.
    /// The file is named relative to `directory` and reached beneath it (a link or FIFO there
    /// is never opened, and counts as not locked).
    public static func isLocked(_ relative: String, in directory: ConfinedDirectory) -> Bool {
        guard let fd = try? directory.openFile(relative, .read) else { return false }
        defer { Glibc.close(fd) }
        return !tryLock(fd, .exclusive)
    }
}
