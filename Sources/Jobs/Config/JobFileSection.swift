/// The top level of a job file: every key a job file may have besides its kind's `params:`.
public enum JobFileSection: ConfigSection {
    public static let path = ""

    public static let name = Param<String>.required(
        "name", doc: "the job's name (`[A-Za-z0-9][A-Za-z0-9_-]*`, at most 64): `jobrun run <name>`, unit `jobrun-<name>.service`, metrics `jobrun_<name>.prom`"
    )
    public static let kind = Param<String>.required("kind", doc: "what the job does: one of the kinds in docs/job-files.md")
    public static let description = OptionalParam<String>("description", doc: "a line for people: shown by `list` and `status`")
    public static let enabled = Param<Bool>(
        "enabled", default: true, doc: "false suspends the job: its schedule never fires it and no timer is written; `run` by hand still works")
    public static let schedule = OptionalParam<String>(
        "schedule", doc: "when the job is due, a cron expression (`*/15 * * * *`, `@daily`); without it the job only runs by hand")
    public static let timeZone = OptionalParam<String>(
        "timeZone", doc: "IANA time zone the schedule is read in (default: the host's local time)")
    public static let timeout = Param<Duration>(
        "timeout", default: .hours(1), range: 1...(7 * 86_400), doc: "a run past this is cancelled cooperatively and recorded as timed out")
    public static let retry = SectionParam<RetrySection>("retry", doc: "retries of a failed run")
    public static let concurrencyPolicy = Param<ConcurrencyPolicy>(
        "concurrencyPolicy", default: .forbid, doc: "what a run does when another run of the job holds its lock")
    public static let lockWait = Param<Duration>(
        "lockWait", default: .zero, range: 0...(7 * 86_400), doc: "how long a second run waits for the lock before giving up")
    public static let startingDeadline = OptionalParam<Duration>(
        "startingDeadline", range: 1...(366 * 86_400), doc: "a missed run older than this is skipped (default: always catch up once)")
    public static let randomizedDelay = Param<Duration>(
        "randomizedDelay", default: .zero, range: 0...86_400, doc: "random delay added to each timer fire (`RandomizedDelaySec=`), to spread load")
    public static let accounts = Param<[Int64]>(
        "accounts", default: [0], range: 0...Double(Int32.max), doc: "the accounts (`<root>/account-<id>/`) the job runs for, each once")
    public static let params = OptionalParam<KindParameterMapping>(
        "params", doc: "kind-specific parameters, checked against the kind's schema (docs/job-files.md)")
    public static let onFailure = OptionalParam<String>(
        "onFailure", environment: "JOBRUN_ON_FAILURE", doc: "run with `/bin/sh -c` when a run fails or times out, once per failure streak")
    public static let heartbeat = OptionalParam<String>(
        "heartbeat", environment: "JOBRUN_HEARTBEAT",
        doc: "http(s) URL pinged at start, success and failure (`{job}` in the variable is the job's name)")
    public static let heartbeatTimeout = Param<Duration>(
        "heartbeatTimeout", default: .seconds(10), range: 1...300,
        doc: "time allowed for a ping, its 3 attempts together; the pings at a run's end share it, so a finished run exits at most this long after its work")

    public static let parameters: [any JobParameter] = [
        name, kind, description, enabled, schedule, timeZone, timeout, retry, concurrencyPolicy, lockWait, startingDeadline,
        randomizedDelay, accounts, params, onFailure, heartbeat, heartbeatTimeout,
    ]

    public static func check(_ values: JobParams) -> [JobFileError] {
        let ids = values[accounts]
        if ids.isEmpty {
            return [values.error(accounts, "accounts must not be empty", expected: "a list of account ids such as [0]")]
        }
        if Set(ids).count != ids.count { return [values.error(accounts, "an account is listed twice", expected: "each account id once")] }
        return []
    }
}

/// A job file's `retry:`.
public enum RetrySection: ConfigSection {
    public static let path = "retry"

    public static let backoffLimit = Param<Int>(
        "backoffLimit", default: 2, range: 0...100, doc: "retries after a failed attempt (Kubernetes Job semantics)")
    public static let backoff = SectionParam<BackoffSection>("backoff", doc: "the waits between attempts")

    public static let parameters: [any JobParameter] = [backoffLimit, backoff]
}

/// A job file's `retry.backoff:`: `initial`, then `initial × multiplier`, … capped at `max`.
public enum BackoffSection: ConfigSection {
    public static let path = "retry.backoff"

    public static let initial = Param<Duration>("initial", default: .seconds(10), range: 0...86_400, doc: "the wait before the first retry")
    public static let max = Param<Duration>("max", default: .minutes(5), range: 0...(7 * 86_400), doc: "the longest wait")
    public static let multiplier = Param<Double>("multiplier", default: 2, range: 1...10, doc: "each wait is the last one times this")

    public static let parameters: [any JobParameter] = [initial, max, multiplier]

    public static func check(_ values: JobParams) -> [JobFileError] {
        guard values[Self.max] < values[Self.initial] else { return [] }
        return [values.error(Self.max, "retry.backoff.max is shorter than retry.backoff.initial", expected: "max ≥ initial")]
    }
}

/// The type of a job file's `params:`: a mapping validated by the kind `kind:` names.
public struct KindParameterMapping: ParamConvertible {
    public static var paramType: ParamType { .kindParameters }
    public init?(paramValue: ParamValue) {
        guard case .map = paramValue else { return nil }
    }
    public var paramValue: ParamValue { .map([:]) }
}

extension ConcurrencyPolicy: ParamWord {
    public var word: String { rawValue }
}

extension RetryPolicy {
    /// The policy a job file's validated `retry:` describes.
    init(_ retry: JobParams) {
        let backoff = retry[RetrySection.backoff]
        self.init(
            backoffLimit: retry[RetrySection.backoffLimit], initialBackoff: backoff[BackoffSection.initial],
            maxBackoff: backoff[BackoffSection.max], multiplier: backoff[BackoffSection.multiplier])
    }
}
