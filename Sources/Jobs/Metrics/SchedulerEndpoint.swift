import ConfinedFiles
import Foundation
import Synchronization

/// What `jobrun schedule --listen` serves: `/metrics` is every job's metrics file under the
/// root's `metrics/` (the runs this scheduler and this root's other processes made) merged into
/// one exposition, plus `jobrun_scheduler_ready`; `/healthz` answers while the process runs;
/// `/readyz` answers 200 while the scheduler schedules and 503 from SIGTERM on, so that a load
/// balancer or Kubernetes stops counting on a replica that is handing its work over.
public final class SchedulerEndpoint: Sendable {
    public let root: DataRoot
    private let ready = Atomic<Bool>(false)

    public init(root: DataRoot) { self.root = root }

    /// Scheduling (true) or draining (false).
    public func setReady(_ value: Bool) { ready.store(value, ordering: .sequentiallyConsistent) }
    public var isReady: Bool { ready.load(ordering: .sequentiallyConsistent) }

    public func respond(_ path: String) -> MetricsEndpoint.Response {
        switch path {
        case "/metrics":
            return MetricsEndpoint.Response(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metricsText())
        case "/healthz":
            return MetricsEndpoint.Response(status: 200, body: "ok\n")
        case "/readyz":
            return isReady ? MetricsEndpoint.Response(status: 200, body: "ready\n") : MetricsEndpoint.Response(status: 503, body: "draining\n")
        default:
            return MetricsEndpoint.Response(status: 404, body: "not found: /metrics, /healthz, /readyz\n")
        }
    }

    /// The jobs' metrics files merged, and the scheduler's own gauge.
    public func metricsText() -> String {
        // Read beneath `metrics/`'s descriptor: a metrics file replaced by a link (to a file of
        // the host) or a FIFO is skipped, never served.
        var texts: [String] = []
        if let directory = try? root.directory(["metrics"], create: false) {
            for name in directory.entries().filter({ $0.hasSuffix(".prom") }).sorted() {
                if case .success(let bytes) = SmallFile.read(name, in: directory, limit: 16 << 20) { texts.append(String(decoding: bytes, as: UTF8.self)) }
            }
        }
        texts.append(
            """
            # HELP jobrun_scheduler_ready 1 while the scheduler schedules; 0 once it drains after SIGTERM.
            # TYPE jobrun_scheduler_ready gauge
            jobrun_scheduler_ready \(isReady ? 1 : 0)

            """)
        return PrometheusText.merge(texts)
    }
}
