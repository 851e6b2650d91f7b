import Foundation

/// What to do when a run is due while another run of the same job holds its lock
/// (Kubernetes CronJob `concurrencyPolicy` vocabulary).
public enum ConcurrencyPolicy: String, Sendable, Hashable, CaseIterable {
    /// Skip the new run: a second process exits 75 (EX_TEMPFAIL) with a clear message, after
    /// waiting up to `lockWait` for the holder to finish (default 0: exit at once).
    case forbid = "Forbid"
    /// Runs may overlap; no run lock is taken.
    case allow = "Allow"
    /// The new run asks the holder to stop (SIGTERM, it checkpoints and exits), waits up to
    /// `lockWait` (at least 30s) for the lock, then runs; exits 75 if the holder does not let go.
    case replace = "Replace"
}

/// Retry policy: `backoffLimit` retries after a failed attempt, waiting `initial`, then
/// `initial × multiplier`, … capped at `max` (Kubernetes Job `backoffLimit` semantics).
public struct RetryPolicy: Sendable, Hashable {
    public var backoffLimit: Int
    public var initialBackoff: Duration
    public var maxBackoff: Duration
    public var multiplier: Double

    /// The defaults are `RetrySection`'s and `BackoffSection`'s.
    public init(backoffLimit: Int, initialBackoff: Duration, maxBackoff: Duration, multiplier: Double) {
        self.backoffLimit = backoffLimit
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.multiplier = multiplier
    }

    /// Total attempts including the first.
    public var maxAttempts: Int { backoffLimit + 1 }

    /// The wait before retry number `retry` (1 = first retry).
    public func delay(beforeRetry retry: Int) -> Duration {
        guard retry >= 1 else { return .zero }
        let seconds = initialBackoff.jobSeconds * pow(multiplier, Double(retry - 1))
        return .milliseconds(Int64(min(seconds, maxBackoff.jobSeconds) * 1000))
    }
}

/// A validated job file: the unit of work `jobrun run` executes and the scheduler fires.
public struct JobFile: Sendable, Hashable {
    public var name: String
    /// The kind's name (`time-based-cleanup`); the runner finds the kind in its registry.
    public var kind: String
    public var description: String?
    public var enabled: Bool
    /// `nil`: the job only runs when started by hand (`jobrun run`); no timer is written.
    public var schedule: CronSchedule?
    /// Time zone the schedule is read in; `nil` = the host's local time zone (like cron).
    public var timeZone: TimeZone?
    public var timeout: Duration
    public var retry: RetryPolicy
    public var concurrencyPolicy: ConcurrencyPolicy
    /// How long a second run waits for the lock before exiting 75 (`Forbid`) or for the holder
    /// to stop (`Replace`).
    public var lockWait: Duration
    /// A missed fire older than this is skipped, not run late; `nil` = always catch up once.
    public var startingDeadline: Duration?
    /// Random delay added to each timer fire (systemd `RandomizedDelaySec=`).
    public var randomizedDelay: Duration
    public var accounts: [Int64]
    /// Shell command run (`/bin/sh -c`) when a run fails or times out, with the outcome in its
    /// environment; nil = `$JOBRUN_ON_FAILURE`, if set. See `RunAlerts`.
    public var onFailure: String?
    /// Heartbeat URL pinged at start (`<url>/start`), success (`<url>`) and failure
    /// (`<url>/fail`), the healthchecks.io convention; nil = `$JOBRUN_HEARTBEAT`, if set.
    public var heartbeat: String?
    /// How long one heartbeat ping may take (each of its attempts).
    public var heartbeatTimeout: Duration
    public var params: JobParams
    /// The file this job came from.
    public var source: String
    /// Position of `name:`'s value (for catalog-level errors such as duplicate names).
    public var namePosition: SourcePosition

    /// The names of job `name`'s own file, in the order they are looked for: `<name>.yaml`, as
    /// every file in `jobs/` is named, then `<name>.yml`.
    public static func ownFileNames(of name: String) -> [String] { [name + ".yaml", name + ".yml"] }

    /// Whether the job's file is named after it: the file `run <name>` reads, and the one that
    /// wins when names collide.
    public var isInOwnFile: Bool { Self.ownFileNames(of: name).contains((source as NSString).lastPathComponent) }

    /// The time zone schedule computations use.
    public var effectiveTimeZone: TimeZone { timeZone ?? .current }

    /// Next time the job is due strictly after `date`, or nil if unscheduled.
    public func nextFire(after date: Date) -> Date? {
        schedule?.nextFire(after: date, in: effectiveTimeZone)
    }

    /// Loads and validates a job file; every problem is reported with `file:line:column`.
    public static func load(contentsOf url: URL, displayPath: String? = nil, kinds: JobKindRegistry = .shipped) throws(JobFileErrors) -> JobFile {
        let shown = displayPath ?? url.path
        let text = try ConfigFile.text(at: url.path, shown: shown, limit: maximumSize, what: "job file")
        return try parse(yaml: text, file: shown, kinds: kinds)
    }

    /// The largest job file read: job files are a few kilobytes, and every `run` and `schedule`
    /// reads every file of the jobs directory, so one huge file must not stall them.
    public static let maximumSize = 256 * 1024

    /// Parses and validates job-file text; `file` is the name used in error positions.
    public static func parse(yaml: String, file: String, kinds: JobKindRegistry = .shipped) throws(JobFileErrors) -> JobFile {
        var decoder = JobFileDecoder(file: file, kinds: kinds)
        return try decoder.decode(yaml: yaml)
    }
}
