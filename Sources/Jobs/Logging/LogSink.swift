import ConfinedFiles
import Foundation

/// The shared, thread-safe destination of a process's log events: JSON lines appended to
/// `<root>/logs/<process>-logs/<process>.log` (directory 0700, files 0600), rotated by size to
/// `.1` … `.N` and pruned by count and age, plus human-readable lines on stderr when it is a TTY.
///
/// Several processes of one type may share the file: each line is a single `write(2)` with
/// `O_APPEND`, rotation happens under an `flock` on `<process>.log.lock`, and a writer that finds
/// the file rotated under it reopens it.
///
/// Files are opened, renamed and deleted relative to the log directory's descriptor, opened
/// without following links (inside a data root: every component of the path), and the log file
/// with `O_NOFOLLOW`: a symbolic link planted in the log directory is never written through.
public final class LogSink: @unchecked Sendable {
    /// Where console (stderr) lines go.
    public enum ConsoleMode: Sendable, Hashable {
        /// Human-readable lines if stderr is a TTY, nothing otherwise (cron mails stderr).
        case auto
        case human
        case json
        case off
    }

    /// Where and how much to log: directory, rotation size and count, retention age, level, console.
    public struct Configuration: Sendable {
        public var directory: URL?
        public var process: String
        /// The log file's name in `directory`; nil = `<process>.log`.
        public var fileName: String?
        /// Rotate when the current file would grow past this.
        public var maxFileSize: Int64
        /// Rotated files kept (`.1` … `.maxFiles`).
        public var maxFiles: Int
        /// Rotated files older than this are deleted; nil keeps them until `maxFiles` pushes them out.
        public var maxAge: Duration?
        public var minimumLevel: LogLevel
        public var console: ConsoleMode
        /// The data root holding `directory`, if any: the directory is opened through its
        /// no-follow walk.
        public var root: DataRoot?

        public init(
            directory: URL?, process: String, maxFileSize: Int64 = 10 << 20, maxFiles: Int = 5,
            maxAge: Duration? = .seconds(14 * 86_400), minimumLevel: LogLevel = .info, console: ConsoleMode = .auto
        ) {
            self.directory = directory
            self.process = process
            self.maxFileSize = maxFileSize
            self.maxFiles = maxFiles
            self.maxAge = maxAge
            self.minimumLevel = minimumLevel
            self.console = console
        }
    }

    public let configuration: Configuration
    /// The current log file (nil for a console-only sink).
    public let fileURL: URL?
    private let lock = NSLock()
    private var fd: Int32 = -1
    /// The log directory, opened without following links (-1 for a console-only sink).
    private var dirFD: Int32 = -1
    private let consoleHuman: Bool
    private let consoleJSON: Bool
    private let pid = Int64(getpid())

    /// A sink writing to `<root>/logs/<process>-logs/`.
    public convenience init(root: DataRoot, process: String, minimumLevel: LogLevel = .info, console: ConsoleMode = .auto) throws {
        var configuration = Configuration(
            directory: root.logs(process: process), process: process,
            minimumLevel: minimumLevel, console: console)
        configuration.root = root
        try self.init(configuration: configuration)
    }

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        switch configuration.console {
        case .auto: consoleHuman = isatty(STDERR_FILENO) == 1; consoleJSON = false
        case .human: consoleHuman = true; consoleJSON = false
        case .json: consoleHuman = false; consoleJSON = true
        case .off: consoleHuman = false; consoleJSON = false
        }
        if let directory = configuration.directory {
            dirFD = try DataRoot.openDirectory(directory, in: configuration.root)
            fileURL = directory.appendingPathComponent(configuration.fileName ?? "\(configuration.process).log")
            try openFile()
        } else {
            fileURL = nil
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if dirFD >= 0 { close(dirFD) }
    }

    /// Writes one event (after redaction). Never throws: a logging failure must not fail a job.
    public func write(level: LogLevel, job: String?, run: String?, event: String, fields: [String: LogValue], date: Date = Date()) {
        guard level >= configuration.minimumLevel else { return }
        let clean = LogRedaction.redact(fields)
        var pairs: [(String, LogValue)] = [
            ("ts", .string(JSONLine.timestamp(date))), ("level", .string(level.rawValue)),
            ("process", .string(configuration.process)), ("pid", .int(pid)),
        ]
        pairs.append(("job", job.map { .string($0) } ?? .null))
        pairs.append(("run", run.map { .string($0) } ?? .null))
        pairs.append(("event", .string(LogRedaction.redactString(event))))
        // Every event says what happened in words, for people reading a journal or a container
        // log; a line for people on the console shows the event and its fields itself, so it adds
        // only a `msg` that says more than they do.
        let worded = LogMessage.worded(event: event, job: job, fields: clean)
        let msg = worded ?? LogMessage.restated(event: event, job: job, fields: clean)
        pairs.append(("msg", .string(LogRedaction.redactString(msg))))
        let reserved: Set<String> = ["ts", "level", "process", "pid", "job", "run", "event", "msg"]
        for key in clean.keys.sorted() where key != "msg" {
            pairs.append((reserved.contains(key) ? "field_\(key)" : key, clean[key]!))
        }
        let line = JSONLine.object(pairs) + "\n"
        lock.lock()
        defer { lock.unlock() }
        if fileURL != nil { appendToFile(line) }
        if consoleJSON {
            FileHandle.standardError.write(Data(line.utf8))
        } else if consoleHuman {
            let shown = Self.humanFields(clean)
            let said = worded.map { event + ": " + $0 } ?? event
            FileHandle.standardError.write(Data(humanLine(date: date, level: level, job: job, run: run, event: said, fields: shown).utf8))
        }
    }

    /// The fields a line for people shows beside the `msg`: an event that words its own `msg` has
    /// said what matters in it, so its structured fields (the params object of `run.started`)
    /// stay in the JSON log.
    static func humanFields(_ fields: [String: LogValue]) -> [String: LogValue] {
        var shown = fields
        if shown.removeValue(forKey: "msg") != nil { shown = shown.filter { !$0.value.isStructured } }
        return shown
    }

    /// A line for people: `23:04:05.123 INFO  sync-history [3f2a] run.finished bytes=1024`.
    func humanLine(date: Date, level: LogLevel, job: String?, run: String?, event: String, fields: [String: LogValue]) -> String {
        let time = String(JSONLine.timestamp(date).dropFirst(11).dropLast())
        var line = "\(time) \(level.rawValue.uppercased().padding(toLength: 7, withPad: " ", startingAt: 0))"
        if let job { line += " \(job)" }
        if let run { line += " [\(run.prefix(8))]" }
        line += " \(LogRedaction.redactString(event))"
        for key in fields.keys.sorted() {
            let value = fields[key]!.description
            line += " \(key)=" + (value.contains(" ") ? "\"\(value)\"" : value)
        }
        return line + "\n"
    }

    // MARK: - File, rotation, retention (called with `lock` held)

    private func openFile() throws {
        guard let url = fileURL, dirFD >= 0 else { return }
        // A link, FIFO or hard-linked file in its place is refused, never appended to.
        let newFD = try DataRoot.openFile(url.lastPathComponent, in: dirFD, directoryPath: url.deletingLastPathComponent().path, .append)
        if fd >= 0 { close(fd) }
        fd = newFD
    }

    private func appendToFile(_ line: String) {
        guard let name = fileURL?.lastPathComponent else { return }
        // Another process may have rotated the file: follow the name, not the old inode.
        var pathStat = stat()
        var fdStat = stat()
        if fd < 0 || fstatat(dirFD, name, &pathStat, AT_SYMLINK_NOFOLLOW) != 0 || fstat(fd, &fdStat) != 0 || pathStat.st_ino != fdStat.st_ino {
            try? openFile()
            if fd >= 0 { fstat(fd, &fdStat) }
        }
        guard fd >= 0 else { return }
        let bytes = Array(line.utf8)
        if Int64(fdStat.st_size) + Int64(bytes.count) > configuration.maxFileSize, fdStat.st_size > 0 {
            rotate()
        }
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 { if errno == EINTR { continue }; return }
                offset += written
            }
        }
    }

    private func rotate() {
        guard let url = fileURL else { return }
        let path = url.lastPathComponent
        let lockFD = openat(dirFD, path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if lockFD >= 0 { flock(lockFD, LOCK_EX) }
        defer { if lockFD >= 0 { flock(lockFD, LOCK_UN); close(lockFD) } }
        var current = stat()
        var mine = stat()
        // Rotate only if nobody did it meanwhile and the file is still too big.
        if fstatat(dirFD, path, &current, AT_SYMLINK_NOFOLLOW) == 0, fstat(fd, &mine) == 0, current.st_ino == mine.st_ino,
            current.st_size > 0
        {
            let keep = max(configuration.maxFiles, 0)
            if keep == 0 {
                unlinkat(dirFD, path, 0)
            } else {
                unlinkat(dirFD, "\(path).\(keep)", 0)
                for index in stride(from: keep - 1, through: 1, by: -1) {
                    renameat(dirFD, "\(path).\(index)", dirFD, "\(path).\(index + 1)")
                }
                renameat(dirFD, path, dirFD, "\(path).1")
            }
        }
        try? openFile()
        prune()
    }

    /// Deletes rotated files beyond `maxFiles` or older than `maxAge`.
    private func prune() {
        guard let url = fileURL else { return }
        let base = url.lastPathComponent + "."
        let now = Date()
        for name in ConfinedDirectory.entries(of: dirFD) where name.hasPrefix(base) {
            guard let index = Int(name.dropFirst(base.count)) else { continue }
            var info = stat()
            let tooOld: Bool
            if let maxAge = configuration.maxAge, fstatat(dirFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
                tooOld = now.timeIntervalSince1970 - Double(info.st_mtim.tv_sec) > maxAge.jobSeconds
            } else {
                tooOld = false
            }
            if index > configuration.maxFiles || tooOld { unlinkat(dirFD, name, 0) }
        }
    }
}
