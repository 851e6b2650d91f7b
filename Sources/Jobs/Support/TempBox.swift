import Foundation

/// Per-launch scratch space: `<root>/temp/<process>/<launch-id>/`, removed by `close()` (or when
/// the value is released), and swept by the next launch if the owner died.
///
/// Ownership is an `flock` held on `<launch-id>/.owner` for the life of the process, not a pid
/// check, so pid reuse cannot keep a dead launch's directory alive or get a live one removed:
/// a sweeper that can take the lock knows the owner is gone.
public final class TempBox: @unchecked Sendable {
    public let process: String
    /// `<pid>-<random>`: unique per launch, readable in `ls`.
    public let launchID: String
    public let directory: URL
    private let lock = NSLock()
    private var ownerFD: Int32
    private var counter = 0
    private static let ownerFile = ".owner"

    /// Creates this launch's directory (0700) and sweeps stale ones of the same process type.
    public init(root: DataRoot, process: String, sweep: Bool = true) throws {
        self.process = process
        let parent = root.temp(process: process)
        try DataRoot.makeDirectory(parent)
        if sweep { _ = Self.sweepStale(in: parent) }
        launchID = "\(getpid())-\(UInt32.random(in: 0...UInt32.max).hexPadded)"
        directory = parent.appendingPathComponent(launchID, isDirectory: true)
        try DataRoot.makeDirectory(directory)
        ownerFD = open(directory.appendingPathComponent(Self.ownerFile).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard ownerFD >= 0, flock(ownerFD, LOCK_EX | LOCK_NB) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        let pid = "\(getpid())\n"
        _ = pid.withCString { Foundation.write(ownerFD, $0, strlen($0)) }
    }

    deinit { close() }

    /// A fresh path inside the box (not created), e.g. for a download or an upload part.
    public func makePath(prefix: String = "tmp", suffix: String = "") -> URL {
        lock.lock()
        counter += 1
        let n = counter
        lock.unlock()
        return directory.appendingPathComponent("\(prefix)-\(n)\(suffix)")
    }

    /// Removes the directory and releases the lock. Idempotent.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard ownerFD >= 0 else { return }
        try? FileManager.default.removeItem(at: directory)
        Foundation.close(ownerFD)
        ownerFD = -1
    }

    /// Removes launch directories under `parent` whose owner lock is not held (owner dead), and
    /// leftovers without an owner file. Returns what was removed.
    @discardableResult
    public static func sweepStale(in parent: URL) -> [URL] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent.path) else { return [] }
        var removed: [URL] = []
        for name in names {
            let url = parent.appendingPathComponent(name, isDirectory: true)
            let owner = url.appendingPathComponent(ownerFile).path
            let fd = open(owner, O_RDWR | O_CLOEXEC)
            if fd < 0 {
                // No owner file: a half-created or foreign entry. Leave very young ones alone.
                if let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                   let modified = attributes[.modificationDate] as? Date, Date().timeIntervalSince(modified) < 60 {
                    continue
                }
            } else if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                Foundation.close(fd) // owner alive
                continue
            }
            if (try? FileManager.default.removeItem(at: url)) != nil { removed.append(url) }
            if fd >= 0 { Foundation.close(fd) }
        }
        return removed
    }

    /// Sweeps every process type's temp directory under the root.
    @discardableResult
    public static func sweepStale(root: DataRoot) -> [URL] {
        guard let processes = try? FileManager.default.contentsOfDirectory(atPath: root.temp.path) else { return [] }
        return processes.flatMap { sweepStale(in: root.temp(process: $0)) }
    }
}

private extension UInt32 {
    var hexPadded: String {
        let hex = String(self, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
