/// Process exit codes of `jobrun`, following sysexits(3) so cron, systemd and scripts can tell
/// a failed job from a configuration mistake or a lock held by another run.
public enum JobExitCode: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// The job (or command) succeeded.
    case ok = 0
    /// The job ran and failed (after its retries).
    case jobFailed = 1
    /// Bad command line (EX_USAGE), e.g. an unknown job name.
    case usage = 64
    /// The cloud could not be reached (EX_UNAVAILABLE); retrying later may help.
    case cloudUnavailable = 69
    /// Temporary failure (EX_TEMPFAIL): another run holds the job's lock.
    case temporary = 75
    /// Bad configuration (EX_CONFIG): a job file or account config is invalid; nothing ran.
    case config = 78

    public var description: String {
        switch self {
        case .ok: return "ok"
        case .jobFailed: return "job failed"
        case .usage: return "usage error"
        case .cloudUnavailable: return "cloud unavailable"
        case .temporary: return "temporary failure (another run holds the lock)"
        case .config: return "configuration error"
        }
    }
}
