import Foundation

/// Paces a response body to a bandwidth: a chunk is written once the time its last byte would
/// take at that rate has passed, so the client sees `bytes / bandwidth` seconds in total.
struct Pacer {
    let bandwidth: Int64
    let start = ContinuousClock.now

    func wait(untilSent bytes: Int64) async throws {
        guard bandwidth > 0 else { return }
        let due = Duration.seconds(Double(bytes) / Double(bandwidth))
        let elapsed = ContinuousClock.now - start
        if due > elapsed { try await Task.sleep(for: due - elapsed) }
    }
}
