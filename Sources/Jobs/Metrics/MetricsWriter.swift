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
///
/// Every file operation is relative to the metrics directory's descriptor, opened without
/// following links (inside a data root: every component of the path): a symbolic link planted
/// as the directory is refused, and one planted as the `.prom` file is replaced, never written
/// through.
public struct MetricsWriter: Sendable {
    public let directory: URL
    public var fileMode: mode_t
    /// The data root holding `directory`, when there is one: the directory is opened through its
    /// no-follow walk.
    private let root: DataRoot?

    public init(directory: URL, fileMode: mode_t = 0o644) {
        self.directory = directory
        self.fileMode = fileMode
        self.root = nil
    }

    public init(root: DataRoot, fileMode: mode_t = 0o644) {
        self.directory = root.metrics
        self.fileMode = fileMode
        self.root = root
    }

    /// `jobrun_<job>.prom`; job names are already `[A-Za-z0-9_-]`, anything else becomes `_`.
    public func fileURL(job: String) -> URL {
        let safe = String(job.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
        return directory.appendingPathComponent("jobrun_\(safe).prom")
    }

    /// Renders and atomically replaces the job's metrics file. Returns its URL.
    @discardableResult
    public func write(_ metrics: RunMetrics) throws -> URL {
        let dirFD = try DataRoot.openDirectory(directory, in: root)
        defer { close(dirFD) }
        let url = fileURL(job: metrics.job)
        var snapshot = metrics
        if snapshot.lastSuccess == nil {
            snapshot.lastSuccess = snapshot.outcome == .succeeded ? snapshot.finished : Self.previousLastSuccess(in: dirFD, name: url.lastPathComponent)
        }
        try Self.atomicWrite(render(snapshot), in: dirFD, name: url.lastPathComponent, directoryPath: directory.path, mode: fileMode)
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

    /// Reads `jobrun_last_success_timestamp_seconds` from an existing file (not through a link).
    static func previousLastSuccess(in dirFD: Int32, name: String) -> Date? {
        let fd = openat(dirFD, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while data.count < 4 << 20 {
            let n = read(fd, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            data += buffer[0..<n]
        }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("jobrun_last_success_timestamp_seconds") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return Date(timeIntervalSince1970: value) }
        }
        return nil
    }

    /// Temp file in the same directory, write, fsync, chmod, rename, fsync directory.
    public static func atomicWrite(_ text: String, to url: URL, mode: mode_t) throws {
        let dirFD = try DataRoot.openDirectory(url.deletingLastPathComponent(), in: nil)
        defer { close(dirFD) }
        try atomicWrite(text, in: dirFD, name: url.lastPathComponent, directoryPath: url.deletingLastPathComponent().path, mode: mode)
    }

    /// `atomicWrite` relative to the directory descriptor `dirFD`: the temp file is created
    /// `O_EXCL | O_NOFOLLOW`, and `renameat` replaces whatever has the final name (a link
    /// included) without following it.
    static func atomicWrite(_ text: String, in dirFD: Int32, name: String, directoryPath: String, mode: mode_t) throws {
        var fd: Int32 = -1
        var tempName = ""
        for _ in 0..<16 {
            tempName = ".\(name).tmp-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
            fd = openat(dirFD, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw MetricsWriteError(path: "\(directoryPath)/\(tempName)", errno: errno) }
        var ok = false
        defer {
            if !ok { unlinkat(dirFD, tempName, 0) }
        }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                throw MetricsWriteError(path: "\(directoryPath)/\(tempName)", errno: code)
            }
            offset += written
        }
        fchmod(fd, mode)
        guard fsync(fd) == 0 else {
            let code = errno
            close(fd)
            throw MetricsWriteError(path: "\(directoryPath)/\(tempName)", errno: code)
        }
        close(fd)
        guard renameat(dirFD, tempName, dirFD, name) == 0 else { throw MetricsWriteError(path: "\(directoryPath)/\(name)", errno: errno) }
        ok = true
        fsync(dirFD)
    }
}

/// A metrics file could not be written: the path and the system's reason.
public struct MetricsWriteError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32

    public var description: String { "cannot write \(path): \(StorageFailure.describe(errno: errno))" }
}
