import ConfinedFiles
import Foundation

/// Writes `<root>/metrics/jobrun_<job>.prom` for node_exporter's textfile collector, atomically:
/// a temp file in the same directory (so the collector never reads half a file; node_exporter
/// skips names not ending in `.prom`), `fsync`, then `rename` over the previous file.
///
/// The directory is not synced after the rename: a power loss right after it leaves the
/// previous complete file (the file's own `fsync` before the rename means the name never points
/// at unwritten data), which is what a power loss a moment earlier leaves too; the next run
/// counts from there. A process crash loses nothing either way: the rename is in the page cache.
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
        func isSafe(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "_") }
        // Checked over the bytes first: a valid job name is used as it is.
        let safe = job.utf8.allSatisfy { $0 < 0x80 && isSafe(Character(Unicode.Scalar($0))) } ? job : String(job.map { isSafe($0) ? $0 : "_" })
        return directory.appendingPathComponent("jobrun_\(safe).prom")
    }

    /// Renders and atomically replaces the job's metrics file. Returns its URL.
    @discardableResult
    public func write(_ metrics: RunMetrics) throws -> URL {
        try update(job: metrics.job) { previous in
            var snapshot = metrics
            if snapshot.lastSuccess == nil {
                snapshot.lastSuccess = snapshot.outcome == .succeeded ? snapshot.finished : previous.lastSuccess
            }
            var runs = previous.runs
            runs[snapshot.outcome.rawValue, default: 0] += 1
            snapshot.runs = runs
            return render(snapshot)
        }
    }

    /// Counts a run that did not start (`skipped`: another run held the lock; `suspended`:
    /// `enabled: false` or `jobrun pause`; `missed`: older than `startingDeadline`) in `jobrun_runs_total`, leaving every other series —
    /// the last real run's times and outcome — as they were.
    @discardableResult
    public func count(job: String, kind: String, outcome: String) throws -> URL {
        try update(job: job) { previous in
            var runs = previous.runs
            runs[outcome, default: 0] += 1
            let labels = [(Self.jobLabel, job), ("kind", kind)]
            var kept = ""
            var inRunsFamily = false
            for line in String(decoding: previous.bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") { inRunsFamily = line.split(separator: " ")[2] == Self.runsTotal }
                if inRunsFamily || line.hasPrefix(Self.runsTotal + "{") { continue }
                kept += line + "\n"
            }
            if kept.isEmpty { kept = renderBuildInfo(labels) }
            return kept + renderRuns(labels, runs)
        }
    }

    /// Replaces the job's file with what `newText` makes of the file there now, under the
    /// directory's lock, once the temp files of killed writers are swept.
    private func update(job: String, _ newText: (_ previous: Previous) throws -> String) throws -> URL {
        let dirFD = try DataRoot.openDirectory(directory, in: root)
        defer { close(dirFD) }
        let url = fileURL(job: job)
        Self.lockDirectory(dirFD)
        defer { Self.unlockDirectory(dirFD) }
        Self.sweepTemporaryFiles(in: dirFD)
        let previous = try Self.previous(in: dirFD, name: url.lastPathComponent, directoryPath: directory.path)
        let text = try newText(previous)
        try Self.atomicWrite(text, in: dirFD, name: url.lastPathComponent, directoryPath: directory.path, mode: fileMode, syncDirectory: false)
        return url
    }

    /// The label naming the job. Not `job`: Prometheus sets `job` to the scrape job's name and
    /// renames a `job` label in the file to `exported_job`.
    public static let jobLabel = "jobrun_job"
    /// The counter of runs by outcome, cumulative across runs (read back from the file).
    public static let runsTotal = "jobrun_runs_total"
    /// Outcomes `jobrun_runs_total` always carries (0 until one happens), so a rate over any of
    /// them is defined from the first scrape.
    public static let countedOutcomes = RunOutcome.allCases.map(\.rawValue) + ["suspended", missedOutcome]
    /// The outcome counting scheduled runs not started because their fire was older than the
    /// job's `startingDeadline`.
    public static let missedOutcome = "missed"
    /// Series kept per metric for a `peer` label: the largest values, the rest summed as
    /// `peer="other"` (peers are unbounded; a metrics file must not be).
    public static let maxPeerSeries = 10

    /// The textfile contents for one run.
    public func render(_ metrics: RunMetrics) -> String {
        let base = [(Self.jobLabel, metrics.job), ("kind", metrics.kind)]
        var out = renderBuildInfo(base)
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(PrometheusText.escapeHelp(help))\n# TYPE \(name) \(type)\n"
        }
        func line(_ name: String, _ labels: [(String, String)], _ value: Double) {
            PrometheusText.appendSample(name, labels: labels, value: value, to: &out)
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
        out += renderRuns(base, metrics.runs)
        let prefix = "jobrun_" + PrometheusText.sanitizeName(metrics.kind) + "_"
        for key in metrics.counters.keys.sorted() {
            let name = prefix + PrometheusText.sanitizeName(key)
            family(name, "gauge", "\(metrics.kind): '\(key)' in the last run.")
            line(name, base, metrics.counters[key]!)
        }
        let grouped = Dictionary(grouping: metrics.samples) { Self.familyName($0) }
        for name in grouped.keys.sorted() {
            let samples = Self.boundingPeers(grouped[name]!)
            family(name, samples[0].type.rawValue, samples[0].help ?? "\(metrics.kind): '\(samples[0].name)' in the last run.")
            for sample in samples {
                line(name, base + sample.labels.keys.sorted().map { ($0, sample.labels[$0]!) }, sample.value)
            }
        }
        return out
    }

    /// `jobrun_<name>`, with `_total` for a counter.
    static func familyName(_ sample: MetricSample) -> String {
        let name = "jobrun_" + PrometheusText.sanitizeName(sample.name)
        return sample.type == .counter && !name.hasSuffix("_total") ? name + "_total" : name
    }

    /// At most `maxPeerSeries` series per other-label combination for a `peer` label: the
    /// largest, then one `peer="other"` with the sum of the rest.
    static func boundingPeers(_ samples: [MetricSample]) -> [MetricSample] {
        guard samples.contains(where: { $0.labels["peer"] != nil }) else { return samples }
        var out = samples.filter { $0.labels["peer"] == nil }
        let groups = Dictionary(grouping: samples.filter { $0.labels["peer"] != nil }) { $0.labels.filter { $0.key != "peer" } }
        for key in groups.keys.sorted(by: { $0.description < $1.description }) {
            let sorted = groups[key]!.sorted { $0.value != $1.value ? $0.value > $1.value : $0.labels["peer"]! < $1.labels["peer"]! }
            out += sorted.prefix(maxPeerSeries)
            let rest = sorted.dropFirst(maxPeerSeries)
            if var other = rest.first {
                other.labels["peer"] = "other"
                other.value = rest.reduce(0) { $0 + $1.value }
                out.append(other)
            }
        }
        return out
    }

    private func renderBuildInfo(_ labels: [(String, String)]) -> String {
        var out = "# HELP jobrun_build_info The jobrun build that wrote this file (always 1).\n# TYPE jobrun_build_info gauge\n"
        PrometheusText.appendSample(
            "jobrun_build_info", labels: [labels[0], ("version", BuildInfo.version), ("swift", BuildInfo.swift), ("platform", BuildInfo.platform)],
            value: 1, to: &out)
        return out
    }

    private func renderRuns(_ labels: [(String, String)], _ runs: [String: Double]) -> String {
        var out =
            "# HELP \(Self.runsTotal) Runs of the job by outcome, skipped overlaps, suspended (disabled or paused) runs and missed starts (older than startingDeadline) included; dry runs are not counted.\n"
        out += "# TYPE \(Self.runsTotal) counter\n"
        let outcomes = Self.countedOutcomes + runs.keys.filter { !Self.countedOutcomes.contains($0) }.sorted()
        for outcome in outcomes { PrometheusText.appendSample(Self.runsTotal, labels: labels + [("outcome", outcome)], value: runs[outcome] ?? 0, to: &out) }
        return out
    }

    /// What the existing file says: its bytes, the last success time and the run counts.
    typealias Previous = (bytes: [UInt8], lastSuccess: Date?, runs: [String: Double])

    static func previous(in dirFD: Int32, name: String, directoryPath: String) throws(DataRootError) -> Previous {
        // A FIFO or device in its place is refused at once (a FIFO would block the run); a link is
        // never followed: it has no previous counts, and the rename replaces the link itself.
        let opened: Int32?
        do { opened = try DataRoot.openFileIfExists(name, in: dirFD, directoryPath: directoryPath, .read) } catch {
            if case .symbolicLink = error { return ([], nil, [:]) }
            throw error
        }
        guard let fd = opened else { return ([], nil, [:]) }
        defer { close(fd) }
        guard case .success(let data) = SmallFile.read(descriptor: fd, limit: 4 << 20) else { return ([], nil, [:]) }
        var lastSuccess: Date?
        var runs: [String: Double] = [:]
        // Over the bytes: only the two series read back are looked at, and no line is split into
        // `Character`s (the file is ASCII by construction; anything else simply does not match).
        let successPrefix = Array("jobrun_last_success_timestamp_seconds".utf8)
        let runsPrefix = Array((runsTotal + "{").utf8)
        let outcomeLabel = Array("outcome=\"".utf8)
        for line in data.split(separator: UInt8(ascii: "\n")) {
            let isSuccess = line.starts(with: successPrefix)
            let isRuns = !isSuccess && line.starts(with: runsPrefix)
            guard isSuccess || isRuns, let value = lastField(line).flatMap({ Double(String(decoding: $0, as: UTF8.self)) }) else { continue }
            if isSuccess { lastSuccess = Date(timeIntervalSince1970: value) }
            if isRuns, let start = indexAfter(outcomeLabel, in: line),
                let end = line[start...].firstIndex(of: UInt8(ascii: "\""))
            {
                runs[String(decoding: line[start..<end], as: UTF8.self)] = value
            }
        }
        return (data, lastSuccess, runs)
    }

    /// The index just after the first `needle` in `line` (a plain loop: `firstRange(of:)` on a slice goes
    /// through Foundation's unspecialized `DataProtocol` and costs more than the whole file).
    private static func indexAfter(_ needle: [UInt8], in line: ArraySlice<UInt8>) -> Int? {
        var start = line.startIndex
        while start + needle.count <= line.endIndex {
            if line[start..<start + needle.count].elementsEqual(needle) { return start + needle.count }
            start += 1
        }
        return nil
    }

    /// The last space-separated field of a line (the sample's value), nil for an empty line.
    private static func lastField(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let space = UInt8(ascii: " ")
        guard let end = line.lastIndex(where: { $0 != space }) else { return nil }
        let start = line[...end].lastIndex(of: space).map { $0 + 1 } ?? line.startIndex
        return line[start...end]
    }

    /// Locks the metrics directory itself (`flock` on its descriptor: no extra file for the
    /// collector to see) so two processes updating one job's counts never lose one.
    static func lockDirectory(_ dirFD: Int32) { flock(dirFD, LOCK_EX) }

    static func unlockDirectory(_ dirFD: Int32) { flock(dirFD, LOCK_UN) }

    /// Removes the temp files (`.<name>.tmp-*`) a writer killed mid-write left. Called with the
    /// directory's lock held: every writer makes its temp file under that lock, so any temp file
    /// seen then belongs to a writer that died.
    static func sweepTemporaryFiles(in dirFD: Int32) {
        for name in ConfinedDirectory.entries(of: dirFD) where name.hasPrefix(".") && name.contains(".prom.tmp-") {
            unlinkat(dirFD, name, 0)
        }
    }

    /// Writes `text` as `name` of the directory descriptor `dirFD` atomically (temp file, write,
    /// fsync, chmod, rename, fsync directory): `ConfinedDirectory`'s `replaceContents`, whose
    /// temporary files (`.<name>.tmp-*`) are the ones swept here.
    static func atomicWrite(_ text: String, in dirFD: Int32, name: String, directoryPath: String, mode: mode_t, syncDirectory: Bool = true) throws {
        let copy = dup(dirFD)
        guard copy >= 0 else { throw MetricsWriteError(path: directoryPath, errno: errno) }
        // Owners and modes of the folder are the caller's check; the new file is this user's.
        let directory = ConfinedDirectory(adopting: copy, path: directoryPath, policy: ConfinementPolicy(allowInsecure: true))
        do throws(ConfinedFileError) {
            try directory.replaceContents(name, with: Array(text.utf8), mode: mode, syncDirectory: syncDirectory)
        } catch {
            if case .system(let path, _, let code) = error { throw MetricsWriteError(path: path, errno: code) }
            throw error
        }
    }
}

/// A metrics file could not be written: the path and the system's reason.
public struct MetricsWriteError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32

    public var description: String { "cannot write \(path): \(StorageFailure.describe(errno: errno))" }
}
