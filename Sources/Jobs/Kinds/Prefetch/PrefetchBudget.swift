import Foundation
import MediaBox

/// Decides, file by file, whether prefetch may start a download: the run's byte budget, the
/// free-space floor of the media file system and the cache's size limit, all counted with the
/// files already in flight. A value type: the job keeps one behind a lock; tests drive it
/// directly.
///
/// - Budget: bytes started this run (what a file still needs, so a resumed partial file costs
///   only its missing part) never exceed `budget`; a failed file gives its share back.
/// - Free space: `free − in flight − needed ≥ freeSpaceFloor`.
/// - Cache limit: `StorageBox total + in flight + size ≤ cacheLimit`, so the cache never ends a
///   run above the limit by more than what was already in flight, and prefetch never fills
///   what cleanup has just freed.
///
/// A file that does not fit is skipped, not waited for: a smaller, older one may still fit.
public struct PrefetchBudget: Sendable, Equatable {
    /// Why a file may not start now.
    public enum Decision: Sendable, Equatable {
        case start
        case budget
        case freeSpace
        case cacheLimit
    }

    public let budget: Int64
    public let freeSpaceFloor: Int64
    public let cacheLimit: Int64?
    /// Bytes reserved by files started this run (given back when a file fails).
    public private(set) var spent: Int64 = 0
    /// Bytes still to be written by files in flight.
    public private(set) var inFlightNeeded: Int64 = 0
    /// Full sizes of files in flight (not yet in the StorageBox total).
    public private(set) var inFlightSize: Int64 = 0

    public init(policy: PrefetchPolicy) {
        budget = policy.budget
        freeSpaceFloor = policy.freeSpaceFloor
        cacheLimit = policy.cacheLimit
    }

    /// Whether a file of `size` bytes, of which `needed` are still missing, may start, given the
    /// cache's total now and the file system's free bytes (nil: unknown, the floor is not
    /// applied). On `.start` the file is counted in flight until `finish`.
    public mutating func admit(size: Int64, needed: Int64, cacheTotal: Int64, freeSpace: Int64?) -> Decision {
        if spent + needed > budget { return .budget }
        if let freeSpace, freeSpace - inFlightNeeded - needed < freeSpaceFloor { return .freeSpace }
        if let cacheLimit, cacheTotal + inFlightSize + size > cacheLimit { return .cacheLimit }
        spent += needed
        inFlightNeeded += needed
        inFlightSize += size
        return .start
    }

    /// A started file ended: it no longer counts in flight; unless it completed, its budget
    /// share is given back.
    public mutating func finish(size: Int64, needed: Int64, completed: Bool) {
        inFlightNeeded -= needed
        inFlightSize -= size
        if !completed { spent -= needed }
    }

    /// True when nothing more can start whatever its size (the budget is spent).
    public var exhausted: Bool { spent >= budget }

    /// Free bytes for unprivileged writers on the file system holding `path` (`statvfs`: one
    /// cheap system call, no I/O), or nil when it cannot be read.
    public static func freeSpace(atPath path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
