import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Lease holder names: `host/pid/start-time/tag`. A holder on this host whose process is gone
/// (or whose pid now belongs to a process started at another time) holds nothing, so a run that
/// was SIGKILLed never blocks the next one until its lease expires.
public enum UploadLeaseHolder {
    /// The holder name of this process, with a free-form `tag` (e.g. the job run id).
    public static func current(tag: String) -> String { ownPrefix + tag }

    /// `host/pid/start-time/` of this process: what its holder names begin with.
    private static let ownPrefix = "\(hostName)/\(getpid())/\(startTime(of: getpid()) ?? 0)/"

    /// True if `holder` names a live process (or one on another host, which cannot be checked).
    /// A holder of this process is alive without a look at `/proc`: a worker claiming the next
    /// item passes over the items this process's other workers hold at every claim.
    public static func isAlive(_ holder: String) -> Bool {
        if holder.hasPrefix(ownPrefix) { return true }
        let parts = holder.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 3, let pid = Int32(parts[1]), let start = UInt64(parts[2]) else { return true }
        guard String(parts[0]) == hostName else { return true }
        if kill(pid, 0) != 0 && errno == ESRCH { return false }
        if let now = startTime(of: pid), start != 0, now != start { return false }
        return true
    }

    static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "/", with: "_")
    }()

    /// Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot).
    static func startTime(of pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3); the start time is field 22.
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }
}
