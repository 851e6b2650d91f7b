import Foundation

/// Jobs paused by an operator (`jobrun pause <job>`), kept under the data root as one small file
/// per job, `suspended/<job>`, so every process that runs jobs on the root — a cron or timer
/// `run --scheduled`, a long-running `schedule` — sees the same state without editing job
/// files. A job file's `enabled: false` suspends the job the same way; `suspension(of:)` answers
/// for both.
///
/// The file holds one JSON line (when, who, why); its presence is the state, so pausing and
/// resuming are a single create or unlink and never race with a reader.
public struct JobSuspension: Sendable {
    public let root: DataRoot

    public init(root: DataRoot) { self.root = root }

    /// Why a job does not run on its schedule.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// The job file says `enabled: false`.
        case disabled(file: String)
        /// `jobrun pause` was run; `since` and `note` come from the pause file.
        case paused(since: Date?, note: String?)

        public var description: String {
            switch self {
            case .disabled(let file): return "disabled in \(file) (enabled: false)"
            case .paused(let since, let note):
                let when = since.map { " since \(ISO8601DateFormatter().string(from: $0))" } ?? ""
                return "paused\(when) with `jobrun pause`" + (note.map { " (\($0))" } ?? "") + "; `jobrun resume` runs it again"
            }
        }

        /// `disabled` or `paused`, for logs, metrics and JSON.
        public var word: String {
            switch self {
            case .disabled: return "disabled"
            case .paused: return "paused"
            }
        }
    }

    /// Why `job` is suspended, or nil when it runs on its schedule.
    public func suspension(of job: JobFile) -> Reason? {
        if !job.enabled { return .disabled(file: job.source) }
        return pause(of: job.name)
    }

    /// The pause of the job named `name`, or nil. Never creates anything.
    public func pause(of name: String) -> Reason? {
        let file = fileURL(name).path
        guard DataRoot.fileType(file) != nil else { return nil }
        // Its presence is the pause; what it says is a note, read only when it is one.
        let values = RunStateFile.read(file, as: PauseNoteSection.self)
        let since = values?[PauseNoteSection.pausedAt].flatMap { ISO8601DateFormatter().date(from: $0) }
        return .paused(since: since, note: values?[PauseNoteSection.note])
    }

    /// Names of every paused job (files under `suspended/`).
    public func pausedJobs() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root.suspended.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// Pauses the job: writes `suspended/<name>` (0600) atomically. Pausing a paused job
    /// refreshes its note.
    public func pause(_ name: String, note: String?, date: Date = Date()) throws {
        var fields: [String: LogValue] = ["job": .string(name), "paused_at": .string(ISO8601DateFormatter().string(from: date))]
        fields["user"] = .string(DataRoot.userName(geteuid()))
        if let note { fields["note"] = .string(note) }
        let dirFD = try root.openDirectory(["suspended"])
        defer { close(dirFD) }
        try MetricsWriter.atomicWrite(
            JSONLine.encode(.object(fields)) + "\n", in: dirFD, name: Self.fileName(name), directoryPath: root.suspended.path, mode: 0o600)
    }

    /// Resumes the job; returns false when it was not paused.
    @discardableResult
    public func resume(_ name: String) throws -> Bool {
        guard DataRoot.fileType(root.suspended.path) != nil else { return false }
        let dirFD = try root.openDirectory(["suspended"], create: false)
        defer { close(dirFD) }
        if unlinkat(dirFD, Self.fileName(name), 0) == 0 {
            fsync(dirFD)
            return true
        }
        if errno == ENOENT { return false }
        throw MetricsWriteError(path: fileURL(name).path, errno: errno)
    }

    private func fileURL(_ name: String) -> URL { root.suspended.appendingPathComponent(Self.fileName(name)) }

    /// Job names are `[A-Za-z0-9_-]`; anything else becomes `_` so a name never leaves the directory.
    static func fileName(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
    }
}
