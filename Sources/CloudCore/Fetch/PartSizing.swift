import CloudProtocol
import Foundation
import Synchronization

/// Whether parts may be larger than a file's preferred part size, from how fast parts arrive.
///
/// Telegram's part rules give a file under 10 MiB 128 KiB parts: on a slow link a part then
/// takes little time, so an interrupted download loses little and a higher priority is served
/// soon. On a fast link the same bytes cost eight requests where one would do. So a run of a
/// file's wanted bytes that fills a whole 1 MiB block comes as one 1 MiB part (a valid part for
/// any file) once the parts of this fetcher are seen to arrive fast enough that such a part
/// takes at most `targetSeconds` (`MultipartFetchConfiguration.largePartSeconds`); until then,
/// and whenever they slow down, parts keep the preferred size. What a kill loses is thereby
/// bounded in time rather than in bytes.
final class PartSizing: Sendable {
    /// The larger part: Telegram's largest.
    static let largePartSize = FilePartRules.maxPartSize
    /// The longest a large part should take (0: never large).
    let targetSeconds: Double
    /// Weight of the newest measure in the running mean of the part rate.
    private static let weight = 0.25
    /// Parts measured before the mean counts.
    private static let warmup = 4

    private struct State {
        var bytesPerSecond = 0.0
        var samples = 0
    }
    private let state = Mutex(State())

    init(targetSeconds: Double) { self.targetSeconds = targetSeconds }

    /// Records a part of `bytes` that took `seconds`, from its request to its verified answer.
    func record(bytes: Int64, seconds: Double) {
        guard bytes > 0, seconds > 0 else { return }
        let rate = Double(bytes) / seconds
        state.withLock { s in
            s.bytesPerSecond = s.samples == 0 ? rate : s.bytesPerSecond + Self.weight * (rate - s.bytesPerSecond)
            s.samples += 1
        }
    }

    /// The part size for whole blocks of wanted bytes when it exceeds `partSize`, or nil (keep
    /// `partSize`).
    func largePartSize(over partSize: Int64) -> Int64? {
        guard Self.largePartSize > partSize, targetSeconds > 0 else { return nil }
        let fast = state.withLock { s in
            s.samples >= Self.warmup && Double(Self.largePartSize) / s.bytesPerSecond <= targetSeconds
        }
        return fast ? Self.largePartSize : nil
    }
}
