import Foundation
import Synchronization

/// Progress of one prefetch run for the person or program watching: on a terminal (stderr is a
/// TTY) one line rewritten in place — files, bytes, rate, ETA —; otherwise a `prefetch.progress`
/// JSON log event at a slower interval, so cron and systemd logs get a heartbeat, not a flood.
///
/// Bytes advance as files complete (a file's parts are not reported one by one).
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
    public init(totalFiles: Int, totalBytes: Int64, log: JobLogger, mode: Mode? = nil) {
        let resolved = mode ?? (isatty(STDERR_FILENO) == 1 ? .terminal : .log)
        self.mode = resolved
        self.totalFiles = totalFiles
        self.totalBytes = totalBytes
        self.log = log
        self.interval = resolved == .terminal ? .milliseconds(500) : .seconds(10)
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
            if let last = $0.lastRender, now - last < interval { return nil }
            $0.lastRender = now
            $0.rendered = true
            return $0
        }
        if let snapshot { render(snapshot, now: now) }
    }

    /// Ends the display: clears the terminal line (the summary follows).
    public func finish() {
        guard mode == .terminal, state.withLock({ $0.rendered }) else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    /// The text of the terminal line (and the fields of the log event) for a state.
    func line(files: Int, bytes: Int64, elapsed: Double) -> (text: String, rate: Double, eta: Double?) {
        let rate = elapsed > 0 ? Double(bytes) / elapsed : 0
        let left = max(0, totalBytes - bytes)
        let eta: Double? = rate > 0 ? Double(left) / rate : nil
        let etaText = eta.map { Self.formatSeconds($0) } ?? "?"
        let text = "prefetch: \(files)/\(totalFiles) files, \(ByteSize.human(bytes))/\(ByteSize.human(totalBytes)), "
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
            var fields: [String: LogValue] = ["files": .int(Int64(s.files)), "files_total": .int(Int64(totalFiles)),
                                              "bytes": .int(s.bytes), "bytes_total": .int(totalBytes), "rate_bps": .int(Int64(rate))]
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
