import Foundation

/// User + system CPU seconds of this process (`RUSAGE_SELF`) or of the children it has waited
/// for (`RUSAGE_CHILDREN`).
func rusageCPUSeconds(_ who: __rusage_who) -> Double {
    var usage = rusage()
    getrusage(who.rawValue, &usage)
    return usage.cpuSeconds
}

extension rusage {
    /// User + system CPU seconds.
    var cpuSeconds: Double { Double(ru_utime.tv_sec + ru_stime.tv_sec) + Double(ru_utime.tv_usec + ru_stime.tv_usec) / 1e6 }
}

/// CPU times of one process from `/proc/<pid>/stat`, in seconds.
struct ProcStat {
    var pid: Int32
    var parent: Int32
    /// utime + stime.
    var own: Double
    /// cutime + cstime: children this process has waited for.
    var reapedChildren: Double

    init?(pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name: state ppid … utime(14) stime(15) cutime(16) cstime(17).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 15, let ppid = Int32(fields[1]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        func field(_ n: Int) -> Double { Double(fields[n - 3]) ?? 0 }
        self.pid = pid
        parent = ppid
        own = (field(14) + field(15)) / ticks
        reapedChildren = (field(16) + field(17)) / ticks
    }

    static func children(of parent: Int32) -> [ProcStat] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.compactMap { ProcStat(pid: $0) }.filter { $0.parent == parent }
    }
}
