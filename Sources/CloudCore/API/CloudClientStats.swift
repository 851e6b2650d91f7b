/// Totals of what one `CloudClient` did since it was created (all callers together).
public struct CloudClientStats: Sendable, Equatable {
    /// HTTP exchanges sent, retries included.
    public var requests: Int = 0
    /// Retries after transport failures or 5xx answers.
    public var retries: Int = 0
    /// `FLOOD_WAIT` answers slept through.
    public var floodWaits: Int = 0
    /// `*_MIGRATE_<n>` answers followed.
    public var migrations: Int = 0
    /// Calls that ended with an error.
    public var failures: Int = 0

    public init() {}
}
