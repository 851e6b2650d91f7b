import Foundation

/// CPU seconds of one phase: the client's (this process, or its finished children such as
/// curl) and the cloudd child's, so a phase's cost on the shared cores is seen apart from its
/// wall time — and how much of the machine the two kept busy: near 100 %, the phase was bound
/// by the cores, and only less work per byte or per file (on either side) makes it faster.
struct PhaseCPU {
    /// The server's CPU seconds so far; nil when it has none of its own (in-process).
    let server: () -> Double?
    private var own: Double
    private var children: Double
    private var serverStart: Double?
    private var wallStart: UInt64

    init(server: @escaping () -> Double?) {
        self.server = server
        own = rusageCPUSeconds(RUSAGE_SELF)
        children = rusageCPUSeconds(RUSAGE_CHILDREN)
        serverStart = server()
        wallStart = DispatchTime.now().uptimeNanoseconds
    }

    /// "<client> used X s CPU, cloudd Y s; together Z s, N % of 2 cores over W s", and starts
    /// the next phase. A `client` that `isChild` is counted from the children that finished
    /// during the phase (curl, aria2c).
    mutating func report(client: String, isChild: Bool = false) -> String {
        let wall = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9
        let clientUsed = isChild ? rusageCPUSeconds(RUSAGE_CHILDREN) - children : rusageCPUSeconds(RUSAGE_SELF) - own
        var total = clientUsed
        var text = "\(client) used \(fmt(clientUsed)) s CPU"
        if let start = serverStart, let now = server() {
            text += ", cloudd \(fmt(now - start)) s"
            total += now - start
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        text += "; together \(fmt(total)) s, \(fmt(100 * total / (wall * Double(cores)), 0)) % of \(cores) cores over \(fmt(wall)) s"
        self = PhaseCPU(server: server)
        return text
    }
}
