import Foundation

/// Where one host's `revalidate-references` run spent its time, from the run's `--json` result
/// (`time_ms`, `counters.revalidation_calls`) and the wall time of its process as the bench saw
/// it: starting the process and opening the store, the pass's steps, and the time the host sat
/// idle at the end while the slowest host finished (a round ends with its slowest host).
struct RevalidationBreakdown {
    var host: String
    /// Seconds from launching `jobrun run` to its exit.
    var wallSeconds: Double
    /// `time_ms` of the run's result.
    var milliseconds: [String: Int64]
    var calls: Int64

    /// The steps of the pass in the order they are printed (the keys of `time_ms`).
    static let steps = ["select", "look", "claim", "call", "commit", "reuse", "held_wait"]

    /// Reads the result `jobrun run --json` printed; nil when it has no breakdown.
    init?(host: String, wallSeconds: Double, json: String) {
        guard let line = json.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let times = object["time_ms"] as? [String: Any]
        else { return nil }
        self.host = host
        self.wallSeconds = wallSeconds
        milliseconds = times.compactMapValues { ($0 as? NSNumber)?.int64Value }
        calls = ((object["counters"] as? [String: Any])?["revalidation_calls"] as? NSNumber)?.int64Value ?? 0
    }

    /// One line per host: wall time, what lay outside the pass (process, store), each step, the
    /// set-aside tail, and the idle time at the end. The steps of different units overlap (a
    /// pass looks at the next units while a call is in flight), so they may sum to more than
    /// the pass.
    static func lines(_ hosts: [RevalidationBreakdown]) -> [String] {
        let slowest = hosts.map(\.wallSeconds).max() ?? 0
        return hosts.map { h in
            let ms = h.milliseconds
            let pass = ms["pass"] ?? 0
            let stepped = steps.reduce(Int64(0)) { $0 + (ms[$1] ?? 0) }
            let perCall =
                h.calls > 0
                ? " (\(fmt(Double(ms["call"] ?? 0) / Double(h.calls), 1)) ms per call, \(fmt(Double(pass) / Double(h.calls), 1)) ms of pass per call)" : ""
            let parts = steps.map { "\($0) \(ms[$0] ?? 0)" }.joined(separator: ", ")
            return
                "  \(h.host): \(fmt(h.wallSeconds * 1000, 0)) ms = outside the pass \(fmt(h.wallSeconds * 1000 - Double(pass), 0)) + pass \(pass) [\(parts); steps sum \(stepped)]; \(h.calls) calls\(perCall); set aside \(ms["units_set_aside"] ?? 0) units, tail \(ms["set_aside_tail"] ?? 0) ms; idle at the end \(fmt((slowest - h.wallSeconds) * 1000, 0)) ms"
        }
    }
}
