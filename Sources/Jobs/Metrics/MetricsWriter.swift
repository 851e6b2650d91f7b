import Foundation

/// Writes `<root>/metrics/jobrun_<job>.prom` for node_exporter's textfile collector, atomically:
/// a temp file in the same directory (so the collector never reads half a file; node_exporter
/// skips names not ending in `.prom`), `fsync`, `rename`, then `fsync` of the directory.
///
/// Permissions: files are written 0644 by default, not 0600 — node_exporter runs as its own user
/// and must read them; they hold only job names, outcomes and counters, never secrets. The
/// metrics directory itself stays 0700 like the rest of the root: grant the collector access with
/// an ACL (`setfacl -m u:node_exporter:x <root>` and `setfacl -m u:node_exporter:rx <root>/metrics`),
/// see docs/logging-and-metrics.md.
public struct MetricsWriter: Sendable {
    public let directory: URL
    public var fileMode: mode_t

    public init(directory: URL, fileMode: mode_t = 0o644) {
        self.directory = directory
        self.fileMode = fileMode
    }

    public init(root: DataRoot, fileMode: mode_t = 0o644) {
        self.init(directory: root.metrics, fileMode: fileMode)
    }

    /// `jobrun_<job>.prom`; job names are already `[A-Za-z0-9_-]`, anything else becomes `_`.
    public func fileURL(job: String) -> URL {
        let safe = String(job.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
        return directory.appendingPathComponent("jobrun_\(safe).prom")
    }

    /// Renders and atomically replaces the job's metrics file. Returns its URL.
    @discardableResult
    public func write(_ metrics: RunMetrics) throws -> URL {
        try DataRoot.makeDirectory(directory)
        let url = fileURL(job: metrics.job)
        var snapshot = metrics
        if snapshot.lastSuccess == nil {
            snapshot.lastSuccess = snapshot.outcome == .succeeded ? snapshot.finished : Self.previousLastSuccess(at: url)
        }
        try Self.atomicWrite(render(snapshot), to: url, mode: fileMode)
        return url
    }

    /// The textfile contents for one run.
    public func render(_ metrics: RunMetrics) -> String {
        let base = [("job", metrics.job), ("kind", metrics.kind)]
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(PrometheusText.escapeHelp(help))\n# TYPE \(name) \(type)\n"
        }
        func line(_ name: String, _ labels: [(String, String)], _ value: Double) {
            out += PrometheusText.sample(name, labels: labels, value: value) + "\n"
        }
        family("jobrun_last_run_timestamp_seconds", "gauge", "Unix time the last run of the job started.")
        line("jobrun_last_run_timestamp_seconds", base, metrics.started.timeIntervalSince1970)
        family("jobrun_last_run_end_timestamp_seconds", "gauge", "Unix time the last run of the job finished.")
        line("jobrun_last_run_end_timestamp_seconds", base, metrics.finished.timeIntervalSince1970)
        if let success = metrics.lastSuccess {
            family("jobrun_last_success_timestamp_seconds", "gauge", "Unix time the last successful run of the job finished.")
            line("jobrun_last_success_timestamp_seconds", base, success.timeIntervalSince1970)
        }
        family("jobrun_last_run_duration_seconds", "gauge", "Duration of the last run in seconds.")
        line("jobrun_last_run_duration_seconds", base, max(0, metrics.finished.timeIntervalSince(metrics.started)))
        family("jobrun_last_run_outcome", "gauge", "Outcome of the last run: 1 for the outcome that happened, 0 for the others.")
        for outcome in RunOutcome.allCases {
            line("jobrun_last_run_outcome", base + [("outcome", outcome.rawValue)], outcome == metrics.outcome ? 1 : 0)
        }
        for key in metrics.counters.keys.sorted() {
            let name = "jobrun_" + PrometheusText.sanitizeName(key)
            family(name, "gauge", "Kind-specific counter '\(key)' from the last run.")
            line(name, base, metrics.counters[key]!)
        }
        let grouped = Dictionary(grouping: metrics.samples) { "jobrun_" + PrometheusText.sanitizeName($0.name) }
        for name in grouped.keys.sorted() {
            let samples = grouped[name]!
            family(name, samples[0].type.rawValue, samples[0].help ?? "Kind-specific metric '\(samples[0].name)' from the last run.")
            for sample in samples {
                line(name, base + sample.labels.keys.sorted().map { ($0, sample.labels[$0]!) }, sample.value)
            }
        }
        return out
    }

    /// Reads `jobrun_last_success_timestamp_seconds` from an existing file.
    static func previousLastSuccess(at url: URL) -> Date? {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("jobrun_last_success_timestamp_seconds") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return Date(timeIntervalSince1970: value) }
        }
        return nil
    }

    /// Temp file in the same directory, write, fsync, chmod, rename, fsync directory.
    public static func atomicWrite(_ text: String, to url: URL, mode: mode_t) throws {
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let tempPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var ok = false
        defer {
            if !ok { unlink(tempPath) }
        }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
            offset += written
        }
        fchmod(fd, mode)
        guard fsync(fd) == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        close(fd)
        guard rename(tempPath, url.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        ok = true
        let dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 { fsync(dirFD); close(dirFD) }
    }
}
