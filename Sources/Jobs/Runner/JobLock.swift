import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// One run of a job at a time across processes: an exclusive `flock` on
/// `<root>/locks/<job>.lock`. The kernel drops the lock when its holder exits for any reason
/// (SIGKILL included), so a crashed run never blocks the next one. The holder's pid is written
/// in the file for messages and for `Replace`.
///
/// The file is opened beneath the `locks/` directory's descriptor (`ConfinedDirectory`) and must
/// be a regular file with one link: a symbolic link, FIFO or hard link planted in its place is
/// refused, never written through.
/// It is kept at 4 KiB, allocated when the lock is taken, so a run whose closing record cannot
/// be written (a full disk) can still leave its outcome there for the next run to record
/// (`recordPendingOutcome`), instead of being taken for an abandoned run.
public final class JobLock: @unchecked Sendable {
    public let path: URL
    private let root: DataRoot?
    private var fd: Int32 = -1
    private var held = false

    /// Bytes of the file: the holder's pid line, then the pending outcome at `outcomeOffset`.
    static let fileSize = 4096
    static let outcomeOffset = 256

    public init(root: DataRoot, job: String) {
        self.root = root
        path = root.locks.appendingPathComponent("\(job).lock")
    }

    /// The pid recorded by the current (or last) holder.
    public var holderPid: Int32? {
        guard let dirFD = try? DataRoot.openDirectory(path.deletingLastPathComponent(), in: root) else { return nil }
        defer { close(dirFD) }
        let directoryPath = path.deletingLastPathComponent().path
        guard let file = try? DataRoot.openFileIfExists(path.lastPathComponent, in: dirFD, directoryPath: directoryPath, .read) else { return nil }
        defer { close(file) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = pread(file, &buffer, buffer.count, 0)
        guard n > 0 else { return nil }
        let line = String(decoding: buffer[0..<n].prefix { $0 != 0x0A && $0 != 0 }, as: UTF8.self)
        return Int32(line.trimmingCharacters(in: .whitespaces))
    }

    /// Tries to take the lock, polling until `wait` has passed. True if taken.
    public func acquire(wait: Duration = .zero) throws -> Bool {
        if fd < 0 {
            let dirFD: Int32
            do { dirFD = try DataRoot.openDirectory(path.deletingLastPathComponent(), in: root) } catch {
                throw JobError("cannot open the lock directory: \(error.description)", exitCode: error.exitCode, retryable: false)
            }
            defer { close(dirFD) }
            // A link, FIFO or hard-linked file in its place is refused, never written through.
            do throws(DataRootError) {
                fd = try DataRoot.openFile(
                    path.lastPathComponent, in: dirFD, directoryPath: path.deletingLastPathComponent().path, .readWriteCreating)
            } catch {
                if case .cannotCreate(_, let e, _) = error {
                    throw JobError(
                        "cannot open lock file \(path.path): \(StorageFailure.describe(errno: e))", exitCode: StorageFailure.exitCode(errno: e),
                        retryable: false)
                }
                throw JobError(error.description, exitCode: error.exitCode, retryable: false)
            }
        }
        let deadline = ContinuousClock.now + wait
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                held = true
                writePid(getpid())
                return true
            }
            if ContinuousClock.now >= deadline { return false }
            usleep(100_000)
        }
    }

    /// Writes the pid line over the first bytes and makes sure the file holds its 4 KiB (the
    /// pending-outcome area is allocated now, while there is room).
    private func writePid(_ pid: Int32?) {
        var head = [UInt8](repeating: 0, count: Self.outcomeOffset)
        if let pid { for (i, b) in "\(pid)\n".utf8.enumerated() { head[i] = b } }
        _ = pwrite(fd, head, head.count, 0)
        var st = stat()
        if fstat(fd, &st) == 0, st.st_size < Self.fileSize {
            let tail = [UInt8](repeating: 0, count: Self.fileSize - Self.outcomeOffset)
            _ = pwrite(fd, tail, tail.count, off_t(Self.outcomeOffset))
        }
    }

    /// The outcome of a run that ended while its record could not be written.
    public struct PendingOutcome: Sendable, Equatable {
        public var runId: String
        public var outcome: JobRunRecord.Outcome
        public var exitCode: Int32
        public var startedAtMs: Int64
        public var endedAtMs: Int64
        public var pid: Int32
        public var attempts: Int32
        public var message: String

        public init(
            runId: String, outcome: JobRunRecord.Outcome, exitCode: Int32, startedAtMs: Int64, endedAtMs: Int64,
            pid: Int32 = getpid(), attempts: Int32 = 1, message: String
        ) {
            self.runId = runId
            self.outcome = outcome
            self.exitCode = exitCode
            self.startedAtMs = startedAtMs
            self.endedAtMs = endedAtMs
            self.pid = pid
            self.attempts = attempts
            self.message = message
        }
    }

    /// Leaves `outcome` in the lock file's allocated area (held lock only): overwriting
    /// allocated bytes needs no new disk space. True if written.
    @discardableResult
    public func recordPendingOutcome(_ outcome: PendingOutcome) -> Bool {
        guard fd >= 0, held else { return false }
        let clean = outcome.message.map { $0 == "\t" || $0.isNewline ? " " : $0 }
        let o = outcome
        var line = Array("\(o.runId)\t\(o.outcome.rawValue)\t\(o.exitCode)\t\(o.startedAtMs)\t\(o.endedAtMs)\t\(o.pid)\t\(o.attempts)\t".utf8)
        line += Array(String(clean).utf8).prefix(Self.fileSize - Self.outcomeOffset - line.count - 1)
        line.append(0x0A)
        var area = [UInt8](repeating: 0, count: Self.fileSize - Self.outcomeOffset)
        area.replaceSubrange(0..<line.count, with: line)
        return pwrite(fd, area, area.count, off_t(Self.outcomeOffset)) == area.count && fdatasync(fd) == 0
    }

    /// The outcome a previous holder left (held lock only).
    public func pendingOutcome() -> PendingOutcome? {
        guard fd >= 0, held else { return nil }
        var area = [UInt8](repeating: 0, count: Self.fileSize - Self.outcomeOffset)
        let n = pread(fd, &area, area.count, off_t(Self.outcomeOffset))
        guard n > 0 else { return nil }
        let text = String(decoding: area[0..<n].prefix { $0 != 0x0A && $0 != 0 }, as: UTF8.self)
        let fields = text.split(separator: "\t", maxSplits: 7, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 8, let outcome = JobRunRecord.Outcome(rawValue: fields[1]), let code = Int32(fields[2]),
            let started = Int64(fields[3]), let ended = Int64(fields[4]), let pid = Int32(fields[5]), let attempts = Int32(fields[6])
        else { return nil }
        return PendingOutcome(
            runId: fields[0], outcome: outcome, exitCode: code, startedAtMs: started, endedAtMs: ended,
            pid: pid, attempts: attempts, message: fields[7])
    }

    /// Forgets the pending outcome once it is recorded in the stores (held lock only).
    public func clearPendingOutcome() {
        guard fd >= 0, held else { return }
        let area = [UInt8](repeating: 0, count: Self.fileSize - Self.outcomeOffset)
        _ = pwrite(fd, area, area.count, off_t(Self.outcomeOffset))
    }

    /// Releases the lock (also released when the process exits). The pid line is cleared in
    /// place; the file keeps its size.
    public func release() {
        guard fd >= 0 else { return }
        if held {
            writePid(nil)
            flock(fd, LOCK_UN)
            held = false
        }
        close(fd)
        fd = -1
    }

    deinit { release() }
}

extension DataRoot {
    /// `locks/`: one run lock per job.
    public var locks: URL { url.appendingPathComponent("locks", isDirectory: true) }
}
