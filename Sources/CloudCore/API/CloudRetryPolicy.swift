import Foundation

/// How `CloudClient` retries a call: exponential backoff with jitter for transport failures and
/// 5xx answers, and bounded honouring of `FLOOD_WAIT_<s>`.
///
/// The n-th retry waits `min(maxDelay, baseDelay · 2^(n-1))`, scaled by a random factor in
/// `1 − jitter … 1` so that many clients do not retry in lockstep.
public struct CloudRetryPolicy: Sendable, Equatable {
    /// Attempts per call for retryable failures (the first try included).
    public var maxAttempts: Int = 5
    /// First backoff, in seconds.
    public var baseDelay: Double = 0.25
    /// Longest backoff, in seconds.
    public var maxDelay: Double = 8
    /// Fraction (0…1) of each delay that is randomised.
    public var jitter: Double = 0.5
    /// Longest `FLOOD_WAIT` the client sleeps through, in seconds; a longer one fails the call
    /// with the server's error (the caller decides whether to come back later).
    public var maxFloodWait: Double = 30
    /// `FLOOD_WAIT` answers honoured per call before it fails.
    public var maxFloodWaits: Int = 5
    /// `*_MIGRATE_<n>` answers followed per call (a loop between DCs is a server bug).
    public var maxMigrations: Int = 3

    // The values `problems` accepts, declared once: `config.yaml`'s `retry:` schema uses them
    // too. Delays are in seconds.

    public static let maxAttemptsRange: ClosedRange<Int> = 1...100
    public static let baseDelayRange: ClosedRange<Double> = 0...600
    /// `maxDelay` must also be at least `baseDelay`.
    public static let maxDelayRange: ClosedRange<Double> = 0...3600
    public static let jitterRange: ClosedRange<Double> = 0...1
    public static let maxFloodWaitRange: ClosedRange<Double> = 0...86_400
    public static let maxFloodWaitsRange: ClosedRange<Int> = 0...1000
    public static let maxMigrationsRange: ClosedRange<Int> = 0...10

    public init() {}

    public init(
        maxAttempts: Int = 5, baseDelay: Double = 0.25, maxDelay: Double = 8, jitter: Double = 0.5,
        maxFloodWait: Double = 30, maxFloodWaits: Int = 5, maxMigrations: Int = 3
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.maxFloodWait = maxFloodWait
        self.maxFloodWaits = maxFloodWaits
        self.maxMigrations = maxMigrations
    }

    /// `base × 2^(n−1)` capped at `max` (n ≤ 0 counts as 1): the exponential backoff every retry
    /// loop of the client uses (API calls, parts, revalidations, queued uploads).
    public static func exponentialDelay(_ n: Int, base: Double, max cap: Double) -> Double {
        min(cap, base * pow(2, Double(min(Swift.max(0, n - 1), 30))))
    }

    /// The wait before retry number `retry` (1-based), jitter applied.
    public func delay(beforeRetry retry: Int) -> Double {
        let plain = Self.exponentialDelay(retry, base: baseDelay, max: maxDelay)
        let j = min(1, max(0, jitter))
        return plain * (1 - j * Double.random(in: 0...1))
    }

    /// Problems with the values, as sentences (empty when valid).
    public var problems: [String] {
        var out: [String] = []
        if !Self.maxAttemptsRange.contains(maxAttempts) {
            out.append("retry.maxAttempts must be \(Self.maxAttemptsRange.shownBounds) (got \(maxAttempts))")
        }
        if !Self.baseDelayRange.contains(baseDelay) { out.append("retry.baseDelay must be \(Self.baseDelayRange.shownBounds) seconds") }
        if !(maxDelay >= baseDelay && Self.maxDelayRange.contains(maxDelay)) {
            out.append("retry.maxDelay must be baseDelay…\(Self.maxDelayRange.upperBound.shownBound) seconds")
        }
        if !Self.jitterRange.contains(jitter) { out.append("retry.jitter must be \(Self.jitterRange.shownBounds)") }
        if !Self.maxFloodWaitRange.contains(maxFloodWait) {
            out.append("retry.maxFloodWait must be \(Self.maxFloodWaitRange.shownBounds) seconds")
        }
        if !Self.maxFloodWaitsRange.contains(maxFloodWaits) { out.append("retry.maxFloodWaits must be \(Self.maxFloodWaitsRange.shownBounds)") }
        if !Self.maxMigrationsRange.contains(maxMigrations) { out.append("retry.maxMigrations must be \(Self.maxMigrationsRange.shownBounds)") }
        return out
    }
}
