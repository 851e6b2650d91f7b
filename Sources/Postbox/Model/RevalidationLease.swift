import Foundation

/// Cross-process coordination of one parent's revalidation: who is refreshing it until when,
/// and the last outcome, so a second process waits for or reuses a result instead of calling.
public struct RevalidationLease: PostboxCoding, Sendable, Equatable {
    public enum Outcome: Int32, Sendable {
        case none = 0, refreshed = 1, gone = 2, failed = 3
    }

    /// The lease holder (e.g. "pid@host#launch").
    public var holder: String
    /// Unix milliseconds after which the lease is void (a crashed holder's lease expires).
    public var leaseUntil: Int64
    public var lastOutcome: Outcome
    /// Unix milliseconds of the last outcome.
    public var lastOutcomeAt: Int64
    /// Failures in a row, for backoff.
    public var failures: Int32
    /// A human-readable reason for the last failure (never a secret).
    public var lastError: String?

    public init(
        holder: String = "", leaseUntil: Int64 = 0, lastOutcome: Outcome = .none, lastOutcomeAt: Int64 = 0, failures: Int32 = 0, lastError: String? = nil
    ) {
        self.holder = holder
        self.leaseUntil = leaseUntil
        self.lastOutcome = lastOutcome
        self.lastOutcomeAt = lastOutcomeAt
        self.failures = failures
        self.lastError = lastError
    }

    public init(decoder: PostboxDecoder) throws {
        holder = decoder.decodeString(forKey: "h") ?? ""
        leaseUntil = decoder.decodeInt64(forKey: "u") ?? 0
        lastOutcome = Outcome(rawValue: decoder.decodeInt32(forKey: "o") ?? 0) ?? .none
        lastOutcomeAt = decoder.decodeInt64(forKey: "t") ?? 0
        failures = decoder.decodeInt32(forKey: "f") ?? 0
        lastError = decoder.decodeString(forKey: "e")
    }

    public func encode(_ encoder: PostboxEncoder) {
        encoder.encode(holder, forKey: "h")
        encoder.encode(leaseUntil, forKey: "u")
        encoder.encode(lastOutcome.rawValue, forKey: "o")
        encoder.encode(lastOutcomeAt, forKey: "t")
        encoder.encode(failures, forKey: "f")
        encoder.encodeIfPresent(lastError, forKey: "e")
    }
}
