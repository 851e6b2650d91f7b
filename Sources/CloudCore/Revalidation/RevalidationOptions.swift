import Foundation

/// Tuning of a `RevalidationContext`: how long a waiter waits, how long a result is reused, how
/// message parents coalesce, how the cross-process lease and the failure backoff behave.
/// Durations are in seconds.
public struct RevalidationOptions: Sendable, Equatable {
    /// Names this process in Postbox leases (`pid@host#random`); two contexts over one Postbox
    /// must have different holders.
    public var holder: String
    /// A waiter gets `RevalidationError.timedOut` after this long; the call itself may continue.
    public var requestTimeout: Double = 30
    /// A refreshed (or gone) parent's result is reused for this long without asking again.
    public var cacheTTL: Double = 5
    /// Message parents of one peer asked within this window go out in one `getMessages`.
    public var coalesceWindow: Double = 0.005
    /// Message ids per `getMessages` (the protocol's limit is 100).
    public var maxBatch: Int = 100
    /// How long a parent's Postbox lease holds other processes off (a crashed holder's lease
    /// expires after this).
    public var leaseDuration: Double = 20
    /// How often a process waiting on another process's lease looks at Postbox again.
    public var pollInterval: Double = 0.05
    /// First wait after a failed revalidation of a parent; doubles per failure in a row.
    public var backoffBase: Double = 1
    /// Longest backoff.
    public var backoffMax: Double = 60
    /// Revalidation calls in flight at once over the whole context.
    public var maxConcurrentCalls: Int = 8
    /// Revalidation calls per second over the whole context; nil = unlimited.
    public var requestRate: Double?

    public init(holder: String = RevalidationOptions.defaultHolder()) {
        self.holder = holder
    }

    /// `pid@host#random`: unique per process launch.
    public static func defaultHolder() -> String {
        let host = ProcessInfo.processInfo.hostName
        return "\(getpid())@\(host)#\(UUID().uuidString.prefix(8))"
    }

    /// The backoff after `failures` failed revalidations in a row (0 → none).
    public func backoff(failures: Int32) -> Double {
        guard failures > 0 else { return 0 }
        return CloudRetryPolicy.exponentialDelay(Int(failures), base: backoffBase, max: backoffMax)
    }
}
