import Foundation

/// CPU seconds of one phase: the client's (this process, or its finished children such as
/// curl) and the cloudd child's, so a phase's cost on the shared cores is seen apart from its
/// wall time.
struct PhaseCPU {
    /// The server's CPU seconds so far; nil when it has none of its own (in-process).
    let server: () -> Double?
    private var own: Double
    private var children: Double
    private var serverStart: Double?

    init(server: @escaping () -> Double?) {
        self.server = server
        own = Self.cpuSeconds(RUSAGE_SELF)
        children = Self.cpuSeconds(RUSAGE_CHILDREN)
        serverStart = server()
    }

    /// "<client> used X s CPU, cloudd Y s", and starts the next phase. A `client` that
    /// `isChild` is counted from the children that finished during the phase (curl, aria2c).
    mutating func report(client: String, isChild: Bool = false) -> String {
        let used = isChild ? Self.cpuSeconds(RUSAGE_CHILDREN) - children : Self.cpuSeconds(RUSAGE_SELF) - own
        var text = "\(client) used \(fmt(used)) s CPU"
        if let start = serverStart, let now = server() { text += ", cloudd \(fmt(now - start)) s" }
        self = PhaseCPU(server: server)
        return text
    }

    /// User + system CPU seconds of this process (`RUSAGE_SELF`) or of its waited-for children.
    private static func cpuSeconds(_ who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(who.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// CPU seconds (user + system) process `pid` has used so far, from `/proc/<pid>/stat`; nil if it
/// cannot be read.
func processCPUSeconds(_ pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
    // Fields after the command name: state is field 3, utime and stime are fields 14 and 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
