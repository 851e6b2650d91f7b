import ArgumentParser
import CloudCore
import CloudProtocol
import CloudServer
import Foundation

/// One setting of the transfer benchmarks' round-trip axis: how long `cloudd` waits before
/// every answer (`latencyMs`) and how fast it paces each body, a response's and a request's
/// (`bandwidth`), applied
/// to the API routes and the plain routes alike, so the product and its peers wait exactly as
/// long. Loopback (no delay, no pace) is context: there a row measures CPU per file and per
/// byte on cores shared with the server, not what a user of a real network sees; the delayed
/// settings carry the targets.
struct RoundTrip: Sendable, Equatable, CustomStringConvertible {
    var latencyMs: Int
    /// Bytes per second per body, both ways; 0 = unpaced.
    var bandwidth: Int64

    var isLoopback: Bool { latencyMs == 0 && bandwidth == 0 }

    /// "loopback" or "100 ms, 100 MB/s".
    var description: String {
        guard !isLoopback else { return "loopback" }
        let pace =
            bandwidth == 0 ? "unpaced" : bandwidth >= 1_000_000_000 ? "\(fmt(Double(bandwidth) / 1e9, 0)) GB/s" : "\(fmt(Double(bandwidth) / 1e6, 0)) MB/s"
        return "\(latencyMs) ms, \(pace)"
    }

    /// The label a ratio row starts with: the setting, and for loopback what the row measures.
    var rowLabel: String { isLoopback ? "loopback (context: CPU on 2 shared cores)" : description }

    /// `target` for a delayed setting; none on loopback, which is context.
    func target(_ value: Double) -> Double? { isLoopback ? nil : value }

    /// The axis every transfer benchmark runs by default: loopback, 25 ms at 1 GB/s, and
    /// 100 ms at 100 MB/s.
    static let defaultAxis = "0:0,25:1G,100:100M"

    /// Parses "MS:BANDWIDTH,…" (bandwidth with K/M/G suffixes, 0 = unpaced).
    static func parse(_ text: String) throws -> [RoundTrip] {
        try text.split(separator: ",").map { item in
            let fields = item.split(separator: ":").map { String($0).trimmingCharacters(in: .whitespaces) }
            guard fields.count == 2, let ms = Int(fields[0]), ms >= 0, let bw = BulkFileSpec.parseSize(fields[1]) else {
                throw ValidationError("bad round trip \"\(item)\": expected MS:BANDWIDTH, e.g. 100:100M")
            }
            return RoundTrip(latencyMs: ms, bandwidth: bw)
        }
    }

    /// Sets this delay and pace on the cloud at `base` (`POST /admin/faults`; admin calls are
    /// never delayed) and checks that it took.
    func apply(base: String, transport: any Transport) async throws {
        let faults = FaultConfig(latencyMs: latencyMs, bandwidthBytesPerSecond: bandwidth)
        let r = try await transport.send(
            HTTPRequest(
                url: base + "/admin/faults", method: .post, headers: [HTTPHeader("Content-Type", "application/json")],
                body: .data(try JSONEncoder().encode(faults))))
        guard r.status == 200 else { throw BenchError("POST /admin/faults answered \(r.status)") }
        print("\n──── round trip: \(self) (cloudd delays every answer by \(latencyMs) ms and paces each body, both ways; peers use the same routes)")
    }
}
