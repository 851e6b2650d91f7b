import CCurl
import Foundation

/// The global bandwidth limit: one token bucket per direction shared by every transfer of a
/// transport.
///
/// libcurl's `CURLOPT_MAX_RECV_SPEED_LARGE` is per transfer and only averages over time (a small
/// file already in the socket buffer arrives in one burst), so it cannot cap the sum of many
/// transfers. Instead every write (read) callback takes tokens for the bytes it is handed; when the
/// bucket is empty the callback returns `CURL_WRITEFUNC_PAUSE` (`CURL_READFUNC_PAUSE`) — libcurl
/// keeps the chunk — and the loop unpauses paused transfers round-robin once tokens are back,
/// polling no longer than until then. A chunk may drive the bucket negative (it is taken whole),
/// which later chunks repay; the burst allowance is 50 ms of rate (at least 16 KiB), and a read
/// callback hands libcurl at most one burst however large its upload buffer is.
///
/// `@unchecked Sendable` is not needed: it lives on the loop thread only, reached from the loop
/// and from libcurl callbacks the loop runs.
final class BandwidthLimiter {
    /// One direction's bucket.
    struct Bucket {
        let rate: Double
        let burst: Double
        var tokens: Double
        var last: UInt64

        init(bytesPerSecond: Int) {
            rate = Double(max(1, bytesPerSecond))
            burst = max(rate / 20, 16 * 1024)
            tokens = burst
            last = DispatchTime.now().uptimeNanoseconds
        }

        mutating func refill(now: UInt64) {
            tokens = min(burst, tokens + Double(now &- last) * rate / 1e9)
            last = now
        }

        /// Takes `count` tokens if any are left (possibly going negative).
        mutating func take(_ count: Int, now: UInt64) -> Bool {
            refill(now: now)
            guard tokens > 0 else { return false }
            tokens -= Double(count)
            return true
        }

        /// Milliseconds until the bucket is positive again.
        func millisecondsUntilPositive(now: UInt64) -> Int {
            let pending = tokens + Double(now &- last) * rate / 1e9
            guard pending <= 0 else { return 0 }
            return Int((-pending / rate) * 1000) + 1
        }
    }

    private var receive: Bucket?
    private var send: Bucket?
    /// Transfers paused by a callback, in pause order.
    private var paused: [CurlTransfer] = []

    init?(receiveBytesPerSecond: Int?, sendBytesPerSecond: Int?) {
        guard receiveBytesPerSecond != nil || sendBytesPerSecond != nil else { return nil }
        receive = receiveBytesPerSecond.map(Bucket.init(bytesPerSecond:))
        send = sendBytesPerSecond.map(Bucket.init(bytesPerSecond:))
    }

    /// Write callback: may the transfer consume `count` received bytes now? If not it is paused.
    func admitReceive(_ transfer: CurlTransfer, count: Int) -> Bool {
        guard receive != nil else { return true }
        if receive!.take(count, now: DispatchTime.now().uptimeNanoseconds) { return true }
        pause(transfer, sending: false)
        return false
    }

    /// The most a read callback should hand libcurl at once under a send limit: the bucket's
    /// burst, so that one chunk (taken whole) overshoots the rate by at most that much however
    /// large libcurl's upload buffer is. Nil without a send limit.
    var sendChunkLimit: Int? { send.map { Int($0.burst) } }

    /// Read callback: may the transfer send `count` bytes now? If not it is paused.
    func admitSend(_ transfer: CurlTransfer, count: Int) -> Bool {
        guard send != nil else { return true }
        if send!.take(count, now: DispatchTime.now().uptimeNanoseconds) { return true }
        pause(transfer, sending: true)
        return false
    }

    private func pause(_ transfer: CurlTransfer, sending: Bool) {
        transfer.pausedForSend = sending
        if !transfer.isPaused {
            transfer.isPaused = true
            paused.append(transfer)
        }
    }

    /// Forgets a transfer that finished or was cancelled.
    func remove(_ transfer: CurlTransfer) {
        guard transfer.isPaused else { return }
        transfer.isPaused = false
        paused.removeAll { $0 === transfer }
    }

    /// Unpauses the paused transfers whose bucket has tokens again (an unpause may deliver the held
    /// chunk at once, which takes tokens or pauses the transfer again). Returns the milliseconds
    /// the loop may poll before calling again, nil when nothing is paused.
    func resumeReady() -> Int? {
        guard !paused.isEmpty else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        let receiveWait = receive?.millisecondsUntilPositive(now: now) ?? 0
        let sendWait = send?.millisecondsUntilPositive(now: now) ?? 0
        let batch = paused
        paused.removeAll(keepingCapacity: true)
        var wait = Int.max
        for transfer in batch {
            let transferWait = transfer.pausedForSend ? sendWait : receiveWait
            if transferWait > 0 {
                paused.append(transfer)
                wait = min(wait, transferWait)
                continue
            }
            transfer.isPaused = false
            if let easy = transfer.easy { _ = jr_easy_unpause(easy.raw) }
        }
        if paused.isEmpty { return nil }
        return wait == Int.max ? 1 : wait
    }
}
