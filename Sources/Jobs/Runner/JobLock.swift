import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One run of a job at a time across processes: an exclusive `flock` on
/// `<root>/locks/<job>.lock`. The kernel drops the lock when its holder exits for any reason
/// (SIGKILL included), so a crashed run never blocks the next one. The holder's pid is written
/// in the file for messages and for `Replace`.
public final class JobLock: @unchecked Sendable {
    public let path: URL
    private var fd: Int32 = -1

    public init(root: DataRoot, job: String) {
        path = root.locks.appendingPathComponent("\(job).lock")
    }

    /// The pid recorded by the current (or last) holder.
    public var holderPid: Int32? {
        guard let text = try? String(contentsOf: path, encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Tries to take the lock, polling until `wait` has passed. True if taken.
    public func acquire(wait: Duration = .zero) throws -> Bool {
        try DataRoot.makeDirectory(path.deletingLastPathComponent())
        if fd < 0 {
            fd = open(path.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if fd < 0 { throw JobError("cannot open lock file \(path.path): \(String(cString: strerror(errno)))", exitCode: .temporary) }
        }
        let deadline = ContinuousClock.now + wait
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                let pid = "\(getpid())\n"
                _ = ftruncate(fd, 0)
                _ = pwrite(fd, pid, pid.utf8.count, 0)
                return true
            }
            if ContinuousClock.now >= deadline { return false }
            usleep(100_000)
        }
    }

    /// Releases the lock (also released when the process exits).
    public func release() {
        guard fd >= 0 else { return }
        _ = ftruncate(fd, 0)
        flock(fd, LOCK_UN)
        close(fd)
        fd = -1
    }

    deinit { release() }
}

extension DataRoot {
    /// `locks/`: one run lock per job.
    public var locks: URL { url.appendingPathComponent("locks", isDirectory: true) }
}
