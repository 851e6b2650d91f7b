import Foundation
import Synchronization

/// Progress of a run that moves files — `prefetch-chat-media`'s downloads, `upload-queue`'s
/// uploads — for the person or program watching: on a terminal (stderr is a TTY) one line
/// rewritten in place (files, bytes, recent rate, ETA); otherwise a `<label>.progress` JSON log
/// event at a slower interval, so cron and systemd logs get a heartbeat, not a flood.
///
/// Bytes advance as parts land (`moved(bytes:)`), not only when a file completes; the rate is
/// the one over the last `window` (what a person watching wants: a stall shows at once), the
/// ETA divides what is left by it. In log mode `finish()` logs the final state once more (when it
/// changed since the last event), with the whole run's average rate, so the last event matches
/// the run's counters; after `finish()` nothing renders.
public final class TransferProgress: Sendable {
    public enum Mode: Sendable, Equatable {
        /// A line on stderr, rewritten with `\r`.
        case terminal
        /// `<label>.progress` log events.
        case log
        /// Nothing (tests, dry runs).
        case off
    }

    struct Sample {
        var at: ContinuousClock.Instant
        var bytes: Int64
    }

    struct State {
        var files = 0
        var bytes: Int64 = 0
        var lastRender: ContinuousClock.Instant?
        var rendered = false
        /// Files and bytes of the last render (so `finish` logs a final event only if it differs).
        var renderedFiles = 0
        var renderedBytes: Int64 = 0
        var finished = false
        /// Bytes seen at earlier renders, oldest first, trimmed to the rate window.
        var samples: [Sample] = []
    }

    public let mode: Mode
    /// The noun of the line and the event's prefix: `prefetch` → `prefetch.progress`.
    let label: String
    let totalFiles: Int
    let totalBytes: Int64
    let log: JobLogger
    let interval: Duration
    /// The span the displayed rate is measured over.
    let window: Duration
    let started = ContinuousClock.now
    private let state = Mutex(State())

    /// - Parameters:
    ///   - label: the line's prefix and the log event's (`prefetch`, `upload`).
    ///   - totalFiles, totalBytes: what the run intends to move.
    ///   - mode: by default `.terminal` when stderr is a TTY, else `.log`.
    ///   - interval: least time between renders; by default 0.5 s on a terminal, 10 s in the log.
    ///   - window: the rate's span; by default 5 s on a terminal, the interval in the log.
    public init(
        label: String, totalFiles: Int, totalBytes: Int64, log: JobLogger, mode: Mode? = nil, interval: Duration? = nil,
        window: Duration? = nil
    ) {
        let resolved = mode ?? (isatty(STDERR_FILENO) == 1 ? .terminal : .log)
        self.mode = resolved
        self.label = label
        self.totalFiles = totalFiles
        self.totalBytes = totalBytes
        self.log = log
        let interval = interval ?? (resolved == .terminal ? .milliseconds(500) : .seconds(10))
        self.interval = interval
        self.window = window ?? (resolved == .terminal ? .seconds(5) : interval)
        state.withLock { $0.samples = [Sample(at: started, bytes: 0)] }
    }

    var bytesForTesting: Int64 { state.withLock { $0.bytes } }
    var filesForTesting: Int { state.withLock { $0.files } }

    /// Runs `body` with the display kept current (a render every `interval`) and finished after
    /// it, however it ends.
    public func during<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        let ticker = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                tick()
            }
        }
        defer {
            ticker.cancel()
            finish()
        }
        return try await body()
    }

    /// Bytes of a file landed (a part written or acknowledged).
    public func moved(bytes: Int64) {
        guard bytes > 0 else { return }
        state.withLock { if !$0.finished { $0.bytes += bytes } }
    }

    /// A file finished (moved, failed or skipped: each counts toward `totalFiles`). `bytes` it
    /// settled with that `moved` did not already count are added (never taken back: progress
    /// does not go backwards).
    public func fileDone(uncounted bytes: Int64 = 0) {
        state.withLock {
            guard !$0.finished else { return }
            $0.files += 1
            $0.bytes += max(0, bytes)
        }
        tick()
    }

    /// Renders if the interval has passed since the last render.
    public func tick() {
        let now = ContinuousClock.now
        let snapshot: (State, Double)? = state.withLock {
            if $0.finished { return nil }  // a late tick (the ticker's last wake-up) must not redraw
            if let last = $0.lastRender, now - last < interval { return nil }
            $0.lastRender = now
            $0.rendered = true
            $0.renderedFiles = $0.files
            $0.renderedBytes = $0.bytes
            let rate = Self.recentRate(&$0, now: now, window: window)
            return ($0, rate)
        }
        if let (s, rate) = snapshot { render(s, rate: rate, now: now) }
    }

    /// Ends the display: clears the terminal line (the summary follows); in log mode logs the
    /// final state, with the run's average rate, if it changed since the last event. Later ticks
    /// render nothing.
    public func finish() {
        let now = ContinuousClock.now
        let (snapshot, wasRendered): (State?, Bool) = state.withLock {
            guard !$0.finished else { return (nil, false) }
            $0.finished = true
            let changed = $0.files != $0.renderedFiles || $0.bytes != $0.renderedBytes
            return (changed ? $0 : nil, $0.rendered)
        }
        switch mode {
        case .terminal:
            if wasRendered { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        case .log:
            if let snapshot {
                let elapsed = (now - started).jobSeconds
                render(snapshot, rate: elapsed > 0 ? Double(snapshot.bytes) / elapsed : 0, now: now)
            }
        case .off:
            break
        }
    }

    /// Bytes per second over the last `window`: from the newest sample at least `window` old (or
    /// the oldest kept) to now. Records `now` as a sample and drops those no longer needed.
    static func recentRate(_ s: inout State, now: ContinuousClock.Instant, window: Duration) -> Double {
        s.samples.append(Sample(at: now, bytes: s.bytes))
        // Keep one sample at or before the window's start, and everything after it.
        while s.samples.count > 2, now - s.samples[1].at >= window { s.samples.removeFirst() }
        let from = s.samples[0]
        let span = (now - from.at).jobSeconds
        return span > 0 ? Double(s.bytes - from.bytes) / span : 0
    }

    /// The text of the terminal line (and the fields of the log event) for a state.
    func line(files: Int, bytes: Int64, rate: Double) -> (text: String, eta: Double?) {
        Self.line(label: label, files: files, totalFiles: totalFiles, bytes: bytes, totalBytes: totalBytes, rate: rate)
    }

    /// The terminal line and the ETA (seconds; nil while nothing moves):
    /// `prefetch: 12/40 files, 3.1 MiB/12.0 MiB, 1.2 MiB/s, ETA 8s`.
    static func line(label: String, files: Int, totalFiles: Int, bytes: Int64, totalBytes: Int64, rate: Double) -> (text: String, eta: Double?) {
        let left = max(0, totalBytes - bytes)
        let eta: Double? = left == 0 ? 0 : rate > 0 ? Double(left) / rate : nil
        let etaText = eta.map { formatSeconds($0) } ?? "?"
        let text =
            "\(label): \(files)/\(totalFiles) files, \(ByteSize.human(bytes))/\(ByteSize.human(totalBytes)), "
            + "\(ByteSize.human(Int64(rate)))/s, ETA \(etaText)"
        return (text, eta)
    }

    private func render(_ s: State, rate: Double, now: ContinuousClock.Instant) {
        let (text, eta) = line(files: s.files, bytes: s.bytes, rate: rate)
        switch mode {
        case .terminal:
            FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        case .log:
            var fields: [String: LogValue] = [
                "files": .int(Int64(s.files)), "files_total": .int(Int64(totalFiles)),
                "bytes": .int(s.bytes), "bytes_total": .int(totalBytes), "rate_bps": .int(Int64(rate)),
                "msg": .string(text),
            ]
            if let eta { fields["eta_s"] = .int(Int64(eta.rounded())) }
            log.info("\(label).progress", fields)
        case .off:
            break
        }
    }

    static func formatSeconds(_ s: Double) -> String {
        let t = Int(s.rounded())
        if t < 60 { return "\(t)s" }
        if t < 3600 { return "\(t / 60)m\(String(format: "%02d", t % 60))s" }
        return "\(t / 3600)h\(String(format: "%02d", t % 3600 / 60))m"
    }
}
