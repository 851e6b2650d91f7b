import Foundation

/// This process's I/O counters from `/proc/self/io`, with its CPU time: what a benchmark pass
/// asked of the kernel, so a row can show whether two sides did the same work.
struct ProcessIO {
    /// Bytes passed to `read`/`pread` and to `write`/`pwrite` (page cache hits included).
    var readCalls: Int64 = 0
    var writeCalls: Int64 = 0
    var readBytes: Int64 = 0
    var writtenBytes: Int64 = 0
    /// Bytes this process made the block layer read, and the bytes of page cache it dirtied
    /// (what must reach the disk).
    var diskReadBytes: Int64 = 0
    var diskWriteBytes: Int64 = 0
    /// User + system CPU seconds.
    var cpuSeconds: Double = 0

    /// The counters now; zero where `/proc` is not there.
    static func now() -> ProcessIO {
        var io = ProcessIO()
        io.cpuSeconds = rusageCPUSeconds(RUSAGE_SELF)
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return io }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            guard parts.count == 2, let value = Int64(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
            switch parts[0] {
            case "rchar": io.readBytes = value
            case "wchar": io.writtenBytes = value
            case "syscr": io.readCalls = value
            case "syscw": io.writeCalls = value
            case "read_bytes": io.diskReadBytes = value
            case "write_bytes": io.diskWriteBytes = value
            default: break
            }
        }
        return io
    }

    /// What happened between `earlier` and `self`.
    func since(_ earlier: ProcessIO) -> ProcessIO {
        ProcessIO(
            readCalls: readCalls - earlier.readCalls, writeCalls: writeCalls - earlier.writeCalls, readBytes: readBytes - earlier.readBytes,
            writtenBytes: writtenBytes - earlier.writtenBytes, diskReadBytes: diskReadBytes - earlier.diskReadBytes,
            diskWriteBytes: diskWriteBytes - earlier.diskWriteBytes,
            cpuSeconds: cpuSeconds - earlier.cpuSeconds)
    }

    /// Space-separated, for a child process's answer; `parse` reads it back.
    var fields: String {
        "\(readCalls) \(writeCalls) \(readBytes) \(writtenBytes) \(diskReadBytes) \(diskWriteBytes) \(cpuSeconds)"
    }

    static let fieldCount = 7

    static func parse<S: StringProtocol>(_ fields: [S]) -> ProcessIO? {
        guard fields.count == fieldCount else { return nil }
        let n = fields.prefix(6).compactMap { Int64($0) }
        guard n.count == 6, let cpu = Double(fields[6].trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
        return ProcessIO(
            readCalls: n[0], writeCalls: n[1], readBytes: n[2], writtenBytes: n[3], diskReadBytes: n[4], diskWriteBytes: n[5], cpuSeconds: cpu)
    }

    /// "W MiB in N writes (D MiB dirtied)", for a table cell.
    var writesCell: String {
        "\(fmt(Double(writtenBytes) / 1_048_576, 0)) MiB / \(writeCalls) calls (\(fmt(Double(diskWriteBytes) / 1_048_576, 0)) to disk)"
    }

    /// "R MiB in N reads (D MiB from disk)", for a table cell.
    var readsCell: String {
        "\(fmt(Double(readBytes) / 1_048_576, 0)) MiB / \(readCalls) calls (\(fmt(Double(diskReadBytes) / 1_048_576, 0)) from disk)"
    }
}
