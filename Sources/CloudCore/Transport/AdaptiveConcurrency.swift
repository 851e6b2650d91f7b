import Foundation
import Synchronization

/// How many requests a transfer keeps in flight, found by measuring rather than set: the same
/// number cannot suit a loopback server (where more requests only cost CPU and memory) and a
/// datacenter 100 ms away (where throughput grows with every request in flight until the link
/// or the CPU is full).
///
/// It works as TCP's slow start with a plateau test (BBR's "full pipe" rule): the limit starts
/// at `initial` and doubles after every round in which throughput grew by a quarter or more
/// over the best seen; after three rounds in a row without such growth (BBR's count: on a
/// loaded machine one or two rounds of a few round trips each can fall short by chance, and
/// settling on them leaves a far link with a fraction of the requests it needs) it settles on
/// the smallest limit that reached the best throughput. A round is the `limit` requests completed after the
/// completion that ended the one before (one window's worth: with at most `limit` in flight, the
/// last of them was started after that completion, so every round spans at least a round trip)
/// and lasts at least `minimumRound`. Settled, it probes one step up every `probeInterval` rounds and keeps
/// the step only if throughput grew by an eighth; when throughput falls below half the best for
/// two rounds (the path changed), it forgets the best and starts over from the current limit.
/// A round in which the requests did not fill the window (fewer were waiting than the limit
/// allowed: the transfer, not the limit, held the pace) tells nothing about a larger limit and
/// is left out, as BBR leaves out its "application-limited" samples. The limit never leaves
/// `floor…ceiling`.
public final class AdaptiveConcurrency: Sendable {
    /// The limit as it stands, the highest it reached, and whether it has settled.
    public struct Snapshot: Sendable, Equatable, CustomStringConvertible {
        public var limit: Int
        public var peak: Int
        public var settled: Bool
        public var description: String { "\(limit)\(settled ? " (settled)" : "") of at most \(peak) tried" }
    }

    private struct State {
        var limit: Int
        var peak: Int
        var bestRate = 0.0
        var bestLimit: Int
        var stalls = 0
        var settled = false
        var roundsSettled = 0
        var probing: Int? = nil
        var slumps = 0
        var roundStart: UInt64 = 0
        var roundBytes: Int64 = 0
        var roundCount = 0
        var roundFilled = 0
    }

    /// Rounds in a row without a quarter's growth before the limit settles.
    static let stallsBeforeSettling = 3

    public let floor: Int
    public let ceiling: Int
    private let minimumRound: UInt64
    private let probeInterval: Int
    private let state: Mutex<State>

    /// - Parameters:
    ///   - initial: the limit before anything was measured.
    ///   - floor, ceiling: the bounds it stays within (`ceiling` is a protocol's or a
    ///     datacenter's limit, never a tuning).
    ///   - minimumRound: the shortest round, in seconds (a round of very quick requests is noise).
    public init(initial: Int, floor: Int = 1, ceiling: Int, minimumRound: Double = 0.02, probeInterval: Int = 8) {
        let ceiling = max(1, ceiling)
        let floor = min(max(1, floor), ceiling)
        let initial = min(max(initial, floor), ceiling)
        self.floor = floor
        self.ceiling = ceiling
        self.minimumRound = UInt64(minimumRound * 1e9)
        self.probeInterval = max(1, probeInterval)
        state = Mutex(State(limit: initial, peak: initial, bestLimit: initial))
    }

    /// Requests allowed in flight now.
    public var limit: Int { state.withLock { $0.limit } }

    public var snapshot: Snapshot { state.withLock { Snapshot(limit: $0.limit, peak: $0.peak, settled: $0.settled) } }

    /// Records one completed request of `bytes` (payload moved); `windowFull` tells whether
    /// more requests were waiting for room (or the window was exactly full) when it completed.
    /// May move the limit.
    public func completed(bytes: Int64, windowFull: Bool = true, now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        state.withLock { s in
            if s.roundStart == 0 {
                // The first completion only starts the clock. Counted, it would make the first
                // round span less than a round trip: the window's first requests, started
                // together, complete within a fraction of one, and that burst would read as a
                // rate several times the link's, which no later round could reach.
                s.roundStart = now
                return
            }
            s.roundBytes += bytes
            s.roundCount += 1
            if windowFull { s.roundFilled += 1 }
            let elapsed = now &- s.roundStart
            guard s.roundCount >= s.limit, elapsed >= minimumRound else { return }
            let rate = Double(s.roundBytes) / Double(elapsed)
            let filled = s.roundFilled * 2 >= s.roundCount
            s.roundStart = now
            s.roundBytes = 0
            s.roundCount = 0
            s.roundFilled = 0
            if filled { endRound(&s, rate: rate) }
        }
    }

    private func endRound(_ s: inout State, rate: Double) {
        if !s.settled {
            if rate >= s.bestRate * 1.25 {
                s.bestRate = rate
                s.bestLimit = s.limit
                s.stalls = 0
                set(&s, s.limit * 2)
                if s.limit == s.bestLimit { settle(&s) }  // at the ceiling
            } else {
                s.stalls += 1
                if rate > s.bestRate { s.bestRate = rate }
                if s.stalls >= Self.stallsBeforeSettling { settle(&s) }
            }
            return
        }
        if let base = s.probing {
            s.probing = nil
            if rate >= s.bestRate * 1.125 {
                s.bestRate = rate
                s.bestLimit = s.limit
            } else {
                set(&s, base)
            }
            return
        }
        if rate < s.bestRate * 0.5 {
            s.slumps += 1
            if s.slumps >= 2 {
                s.settled = false
                s.bestRate = rate
                s.bestLimit = s.limit
                s.stalls = 0
                s.slumps = 0
            }
            return
        }
        s.slumps = 0
        s.bestRate = max(s.bestRate, rate)
        s.roundsSettled += 1
        if s.roundsSettled % probeInterval == 0, s.limit < ceiling {
            s.probing = s.limit
            set(&s, s.limit + max(1, s.limit / 4))
        }
    }

    private func settle(_ s: inout State) {
        s.settled = true
        s.stalls = 0
        s.roundsSettled = 0
        set(&s, s.bestLimit)
    }

    private func set(_ s: inout State, _ value: Int) {
        s.limit = min(max(value, floor), ceiling)
        s.peak = max(s.peak, s.limit)
    }
}
