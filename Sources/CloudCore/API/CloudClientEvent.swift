/// Something the client did that a job may want to log or count: retries, flood waits,
/// migrations. Carries names, ids, counts and delays only — never a secret.
public enum CloudClientEvent: Sendable, Equatable {
    /// A call is retried after `delay` seconds because of `reason` (transport failure or 5xx).
    case retry(method: String, endpoint: String, attempt: Int, delay: Double, reason: String)
    /// The server asked to wait `seconds` (`FLOOD_WAIT`); the client sleeps, then retries.
    case floodWait(method: String, endpoint: String, seconds: Int)
    /// The server answered `FILE_MIGRATE_<to>`; the call is repeated there.
    case migrate(method: String, from: String, to: Int)
}

/// Receives `CloudClientEvent`s (called on the calling task; must be quick).
public typealias CloudClientObserver = @Sendable (CloudClientEvent) -> Void
