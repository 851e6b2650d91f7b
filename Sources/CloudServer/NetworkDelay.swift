import Foundation

/// The network a client sees in front of a server: a wait before every answer and a pace for
/// each body, an answer's and a request's alike (a link's bandwidth holds both ways). `cloudd` applies it to its own answers (`--latency-ms`, `--bandwidth`);
/// `DelayingProxy` applies the same to a server that has no such knobs (an S3 server), so that
/// every benchmark's peers and product wait exactly as long.
public struct NetworkDelay: Sendable, Equatable {
    /// Waited before every answer, in milliseconds.
    public var latencyMs: Int
    /// Bytes per second of each answer's and each request's body; 0 = unpaced.
    public var bandwidth: Int64

    public init(latencyMs: Int = 0, bandwidth: Int64 = 0) {
        self.latencyMs = max(0, latencyMs)
        self.bandwidth = max(0, bandwidth)
    }

    /// Waits the latency, once per answer, before its first byte.
    func beforeAnswer() async throws {
        if latencyMs > 0 { try await Task.sleep(for: .milliseconds(latencyMs)) }
    }

    /// Paces one answer's body, from now.
    func pacer() -> Pacer { Pacer(bandwidth: bandwidth) }
}

extension Faults.Knobs {
    /// The latency and bandwidth knobs as a network delay.
    var networkDelay: NetworkDelay { NetworkDelay(latencyMs: latencyMs, bandwidth: bandwidth) }
}
