import ConfinedFiles
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
        // Reached beneath the root: a link or FIFO in its place is never followed or opened; it
        // still counts as a pause (something is there), and every command's layout check refuses it.
        let directory: ConfinedDirectory
        do throws(DataRootError) { directory = try root.directory(["suspended"], create: false) } catch {
            if case .cannotCreate(_, ENOENT, _) = error { return nil }
            return .paused(since: nil, note: nil)
        }
        guard (try? directory.status(Self.fileName(name))) != nil else { return nil }
        // Its presence is the pause; what it says is a note, read only when it is one.
        let values = RunStateFile.read(Self.fileName(name), in: directory, as: PauseNoteSection.self)
        let since = values?[PauseNoteSection.pausedAt].flatMap { ISO8601DateFormatter().date(from: $0) }
        return .paused(since: since, note: values?[PauseNoteSection.note])
    }

    /// Pauses the job: writes `suspended/<name>` (0600) atomically. Pausing a paused job
    /// refreshes its note.
    public func pause(_ name: String, note: String?, date: Date = Date()) throws {
        var fields: [String: LogValue] = ["job": .string(name), "paused_at": .string(ISO8601DateFormatter().string(from: date))]
        fields["user"] = .string(DataRoot.userName(geteuid()))
        if let note { fields["note"] = .string(note) }
        try root.verifyLayoutWarning()
        let directory = try root.directory(["suspended"])
        try MetricsWriter.atomicWrite(
            JSONLine.encode(.object(fields)) + "\n", in: directory.descriptor, name: Self.fileName(name), directoryPath: directory.path, mode: 0o600)
    }

    /// Resumes the job; returns false when it was not paused.
    @discardableResult
    public func resume(_ name: String) throws -> Bool {
        guard DataRoot.fileType(root.suspended.path) != nil else { return false }
        try root.verifyLayoutWarning()
        let directory = try root.directory(["suspended"], create: false)
        do throws(ConfinedFileError) {
            guard try directory.removeFile(Self.fileName(name)) else { return false }
        } catch {
            throw DataRootError(error)
        }
        try? directory.sync()
        return true
    }

    /// Job names are `[A-Za-z0-9_-]`; anything else becomes `_` so a name never leaves the directory.
    static func fileName(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
    }
}
