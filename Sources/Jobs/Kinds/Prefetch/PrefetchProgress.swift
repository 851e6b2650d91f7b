import Foundation
import Synchronization

/// Progress of one prefetch run for the person or program watching: on a terminal (stderr is a
/// TTY) one line rewritten in place — files, bytes, rate, ETA —; otherwise a `prefetch.progress`
/// JSON log event at a slower interval, so cron and systemd logs get a heartbeat, not a flood.
///
/// Bytes advance as files complete (a file's parts are not reported one by one). In log mode
/// `finish()` logs the final state once more (when it changed since the last event), so the last
/// `prefetch.progress` event matches the run's counters; after `finish()` nothing renders.
public final class PrefetchProgress: Sendable {
    public enum Mode: Sendable, Equatable {
        /// A line on stderr, rewritten with `\r`.
        case terminal
        /// `prefetch.progress` log events.
        case log
        /// Nothing (tests, dry runs).
        case off
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
    }

    public let mode: Mode
    let totalFiles: Int
    let totalBytes: Int64
    let log: JobLogger
    let interval: Duration
    let started = ContinuousClock.now
    private let state = Mutex(State())

    /// - Parameters:
    ///   - totalFiles, totalBytes: what the run intends to download (the candidates).
    ///   - mode: by default `.terminal` when stderr is a TTY, else `.log`.
    ///   - interval: least time between renders; by default 0.5 s on a terminal, 10 s in the log.
    public init(totalFiles: Int, totalBytes: Int64, log: JobLogger, mode: Mode? = nil, interval: Duration? = nil) {
        let resolved = mode ?? (isatty(STDERR_FILENO) == 1 ? .terminal : .log)
        self.mode = resolved
        self.totalFiles = totalFiles
        self.totalBytes = totalBytes
        self.log = log
        self.interval = interval ?? (resolved == .terminal ? .milliseconds(500) : .seconds(10))
    }

    /// A file finished (downloaded, failed or skipped: each counts toward `totalFiles`).
    public func fileDone(bytes: Int64) {
        state.withLock {
            $0.files += 1
            $0.bytes += bytes
        }
        tick()
    }

    /// Renders if the interval has passed since the last render.
    public func tick() {
        let now = ContinuousClock.now
        let snapshot: State? = state.withLock {
            if $0.finished { return nil }  // a late tick (the ticker's last wake-up) must not redraw
            if let last = $0.lastRender, now - last < interval { return nil }
            $0.lastRender = now
            $0.rendered = true
            $0.renderedFiles = $0.files
            $0.renderedBytes = $0.bytes
            return $0
        }
        if let snapshot { render(snapshot, now: now) }
    }

    /// Ends the display: clears the terminal line (the summary follows); in log mode logs the
    /// final state if it changed since the last event. Later ticks render nothing.
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
            if let snapshot { render(snapshot, now: now) }
        case .off:
            break
        }
    }

    /// The text of the terminal line (and the fields of the log event) for a state.
    func line(files: Int, bytes: Int64, elapsed: Double) -> (text: String, rate: Double, eta: Double?) {
        Self.line(files: files, totalFiles: totalFiles, bytes: bytes, totalBytes: totalBytes, elapsed: elapsed)
    }

    /// The terminal line, the rate (bytes/s over `elapsed` seconds) and the ETA (seconds; nil
    /// before any byte arrived): `prefetch: 12/40 files, 3.1 MiB/12.0 MiB, 1.2 MiB/s, ETA 8s`.
    static func line(files: Int, totalFiles: Int, bytes: Int64, totalBytes: Int64, elapsed: Double) -> (text: String, rate: Double, eta: Double?) {
        let rate = elapsed > 0 ? Double(bytes) / elapsed : 0
        let left = max(0, totalBytes - bytes)
        let eta: Double? = rate > 0 ? Double(left) / rate : nil
        let etaText = eta.map { formatSeconds($0) } ?? "?"
        let text =
            "prefetch: \(files)/\(totalFiles) files, \(ByteSize.human(bytes))/\(ByteSize.human(totalBytes)), "
            + "\(ByteSize.human(Int64(rate)))/s, ETA \(etaText)"
        return (text, rate, eta)
    }

    private func render(_ s: State, now: ContinuousClock.Instant) {
        let elapsed = (now - started).jobSeconds
        let (text, rate, eta) = line(files: s.files, bytes: s.bytes, elapsed: elapsed)
        switch mode {
        case .terminal:
            FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        case .log:
            var fields: [String: LogValue] = [
                "files": .int(Int64(s.files)), "files_total": .int(Int64(totalFiles)),
                "bytes": .int(s.bytes), "bytes_total": .int(totalBytes), "rate_bps": .int(Int64(rate)),
            ]
            if let eta { fields["eta_s"] = .int(Int64(eta.rounded())) }
            log.info("prefetch.progress", fields)
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
