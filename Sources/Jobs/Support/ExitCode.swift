/// Process exit codes of `jobrun`, following sysexits(3) so cron, systemd and scripts can tell
/// a failed job from a configuration mistake, a data root that cannot be written, a full disk or
/// a lock held by another run.
public enum JobExitCode: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// The job (or command) succeeded.
    case ok = 0
    /// The job ran and failed (after its retries).
    case jobFailed = 1
    /// Bad command line (EX_USAGE), e.g. an unknown job name.
    case usage = 64
    /// An input does not exist or cannot be read (EX_NOINPUT), e.g. `status` on a data root that
    /// does not exist.
    case noInput = 66
    /// The cloud could not be reached (EX_UNAVAILABLE); retrying later may help.
    case cloudUnavailable = 69
    /// The data root (or a directory or store in it) cannot be created or written
    /// (EX_CANTCREAT): not a directory, no permission, a read-only file system.
    case cannotCreate = 73
    /// Input/output error (EX_IOERR): the disk is full, over quota, or failing.
    case ioError = 74
    /// Temporary failure (EX_TEMPFAIL): another run holds the job's lock, or a store stayed
    /// locked by another process longer than the busy timeout.
    case temporary = 75
    /// Bad configuration (EX_CONFIG): a job file or account config is invalid, the data root
    /// is unsafe (a symbolic link inside it, writable by others, owned by another user), or the
    /// host cannot load a library the kind needs (libvips); nothing ran.
    case config = 78

    public var description: String {
        switch self {
        case .ok: return "ok"
        case .jobFailed: return "job failed"
        case .usage: return "usage error"
        case .noInput: return "input missing or unreadable"
        case .cloudUnavailable: return "cloud unavailable"
        case .cannotCreate: return "cannot create or write the data root"
        case .ioError: return "input/output error (disk full or failing)"
        case .temporary: return "temporary failure (another run holds the lock)"
        case .config: return "configuration error"
        }
    }
}
