import Foundation

/// Removing a benchmark's scratch directory: when the benchmark ends or, under `jobrun-bench
/// all`, once every benchmark is done.
///
/// On ext4 without a journal a freed inode is not reused for 60 s once its inode-table block is
/// written back, and for 360 s while that block is dirty, which creating another file in it
/// makes it again. Creating a file scans past every such inode, so a tool that creates
/// thousands of files within minutes of thousands being removed runs several times slower,
/// whoever removed them (`settleDisk` does not help). So no benchmark removes files before a
/// timed phase that creates files: each tool's output stays until the benchmark ends, and `all`
/// runs the benchmarks that time file creation before the one that removes the most, and
/// removes every scratch directory only after the last benchmark. Removals from before a
/// benchmark started are waited out by `FileCreationQuiet`.
enum WorkDirectory {
    /// The file `all` names for its benchmark processes: each appends its scratch directory
    /// there instead of removing it.
    static let deferredRemovalsKey = "JOBRUN_BENCH_DEFERRED_REMOVALS"

    /// Removes `path` now, or lists it for `all` to remove at the end.
    static func remove(_ path: String) {
        if let list = ProcessInfo.processInfo.environment[deferredRemovalsKey], appendLine(Data(path.utf8), to: list) { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes every directory listed in `list`, then the list.
    static func removeDeferred(listedIn list: String) {
        let paths = (try? String(contentsOfFile: list, encoding: .utf8))?.split(separator: "\n") ?? []
        for path in paths { try? FileManager.default.removeItem(atPath: String(path)) }
        try? FileManager.default.removeItem(atPath: list)
    }
}
