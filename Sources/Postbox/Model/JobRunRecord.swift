import Foundation

/// One run of a job, as `jobrun status` shows it.
public struct JobRunRecord: PostboxCoding, Sendable, Equatable {
    public enum Outcome: String, Sendable, CaseIterable {
        case running, succeeded, failed, timedOut = "timed_out", cancelled, skipped
    }

    public var runId: String
    public var job: String
    public var kind: String
    /// Unix milliseconds.
    public var startedAt: Int64
    public var endedAt: Int64?
    public var outcome: Outcome
    public var exitCode: Int32?
    public var attempt: Int32
    public var pid: Int32
    public var message: String?
    /// Kind-specific counters (files fetched, bytes freed, …).
    public var counters: [String: Int64]
    /// A `--dry-run`: it reported what it would do and changed nothing; never a success of the job.
    public var dryRun: Bool
    /// The host that ran it (nil in records written before every run named its host).
    public var host: String?
    /// The scheduled fire it ran for (Unix milliseconds), when a scheduler claimed it as a
    /// cluster work item; nil for runs started by hand or outside a cluster.
    public var fireAt: Int64?

    public init(runId: String, job: String, kind: String, startedAt: Int64, pid: Int32, attempt: Int32 = 1) {
        self.runId = runId
        self.job = job
        self.kind = kind
        self.startedAt = startedAt
        self.endedAt = nil
        self.outcome = .running
        self.exitCode = nil
        self.attempt = attempt
        self.pid = pid
        self.message = nil
        self.counters = [:]
        self.dryRun = false
        self.host = nil
        self.fireAt = nil
    }

    public var durationMs: Int64? { endedAt.map { $0 - startedAt } }

    public init(decoder d: PostboxDecoder) throws {
        runId = d.decodeString(forKey: "r") ?? ""
        job = d.decodeString(forKey: "j") ?? ""
        kind = d.decodeString(forKey: "k") ?? ""
        startedAt = d.decodeInt64(forKey: "s") ?? 0
        endedAt = d.decodeInt64(forKey: "e")
        outcome = Outcome(rawValue: d.decodeString(forKey: "o") ?? "") ?? .failed
        exitCode = d.decodeInt32(forKey: "x")
        attempt = d.decodeInt32(forKey: "a") ?? 1
        pid = d.decodeInt32(forKey: "p") ?? 0
        message = d.decodeString(forKey: "m")
        counters = d.decodeInt64Dictionary(keysKey: "ck", valuesKey: "cv")
        dryRun = (d.decodeInt32(forKey: "d") ?? 0) != 0
        host = d.decodeString(forKey: "h")
        fireAt = d.decodeInt64(forKey: "f")
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(runId, forKey: "r")
        e.encode(job, forKey: "j")
        e.encode(kind, forKey: "k")
        e.encode(startedAt, forKey: "s")
        e.encodeIfPresent(endedAt, forKey: "e")
        e.encode(outcome.rawValue, forKey: "o")
        e.encodeIfPresent(exitCode, forKey: "x")
        e.encode(attempt, forKey: "a")
        e.encode(pid, forKey: "p")
        e.encodeIfPresent(message, forKey: "m")
        e.encode(counters, keysKey: "ck", valuesKey: "cv")
        if dryRun { e.encode(Int32(1), forKey: "d") }  // absent in real runs and in records written before it existed
        e.encodeIfPresent(host, forKey: "h")
        e.encodeIfPresent(fireAt, forKey: "f")
    }
}
