import XCTest

@testable import CloudCore

/// The concurrency controller against model links, on a simulated clock: a link whose
/// throughput grows with every request in flight up to a knee, then stays flat.
final class AdaptiveConcurrencyTests: XCTestCase {
    /// Drives `controller` for `rounds` rounds against a link that moves `perRequest` bytes per
    /// second for each request in flight up to `knee`, and no more beyond it. (36 rounds end
    /// between two of the settled controller's probes, so the limit read is the settled one.)
    private func drive(_ controller: AdaptiveConcurrency, knee: Int, perRequest: Double = 1e6, rounds: Int = 36, windowFull: Bool = true) {
        var now: UInt64 = 1_000_000_000
        for _ in 0..<rounds {
            let limit = controller.limit
            let rate = perRequest * Double(min(limit, knee))
            // One round: `limit` requests of 100 KB complete at the link's rate.
            let bytes: Int64 = 100_000
            let step = UInt64(Double(bytes) / rate * 1e9)
            for _ in 0..<limit {
                now += step
                controller.completed(bytes: bytes, windowFull: windowFull, now: now)
            }
        }
    }

    func testGrowsToAFarLinksKneeAndSettles() {
        let c = AdaptiveConcurrency(initial: 16, ceiling: 128, minimumRound: 0)
        drive(c, knee: 64)
        let s = c.snapshot
        XCTAssertTrue(s.settled)
        // It settles on the knee (the smallest limit with the best throughput), not beyond.
        XCTAssertEqual(s.limit, 64)
        XCTAssertGreaterThanOrEqual(s.peak, 64)
    }

    func testTwoSlowRoundsInARowDoNotSettleItBelowAFarLinksKnee() {
        // A loaded machine: the first two rounds at 32 in flight come out no faster than the
        // round at 16 (the process was not scheduled), the rest at the link's rate.
        let c = AdaptiveConcurrency(initial: 16, ceiling: 128, minimumRound: 0)
        var now: UInt64 = 1_000_000_000
        var slowRounds = 2
        for _ in 0..<36 {
            let limit = c.limit
            var rate = 1e6 * Double(min(limit, 64))
            if limit == 32, slowRounds > 0 {
                rate = 1e6 * 16
                slowRounds -= 1
            }
            let bytes: Int64 = 100_000
            let step = UInt64(Double(bytes) / rate * 1e9)
            for _ in 0..<limit {
                now += step
                c.completed(bytes: bytes, windowFull: true, now: now)
            }
        }
        XCTAssertEqual(slowRounds, 0)
        XCTAssertTrue(c.snapshot.settled)
        XCTAssertEqual(c.snapshot.limit, 64)
    }

    func testAWindowCompletingInBurstsGrowsToAFarLinksKnee() {
        // 100 ms away: a window's requests complete together, spread over a quarter of the
        // round trip, then none until the next round trip; past the knee a round trip carries
        // no more. The first burst alone is no measure of the link.
        let c = AdaptiveConcurrency(initial: 16, ceiling: 128)
        var start: UInt64 = 1_000_000_000
        for _ in 0..<40 {
            let limit = c.limit
            let period = UInt64(100_000_000 * max(1, Double(limit) / 64))
            for i in 0..<limit {
                c.completed(bytes: 100_000, windowFull: true, now: start + UInt64(i) * 25_000_000 / UInt64(limit))
            }
            start += period
        }
        XCTAssertGreaterThanOrEqual(c.snapshot.peak, 64)
        XCTAssertGreaterThanOrEqual(c.limit, 64, "\(c.snapshot)")
    }

    func testStaysLowWhereMoreRequestsDoNotHelp() {
        let c = AdaptiveConcurrency(initial: 16, ceiling: 128, minimumRound: 0)
        drive(c, knee: 4)
        XCTAssertEqual(c.snapshot.limit, 16)
        XCTAssertTrue(c.snapshot.settled)
        XCTAssertLessThanOrEqual(c.snapshot.peak, 32)
    }

    func testNeverPassesTheCeiling() {
        let c = AdaptiveConcurrency(initial: 8, ceiling: 30, minimumRound: 0)
        drive(c, knee: 1000)
        XCTAssertEqual(c.snapshot.limit, 30)
        XCTAssertEqual(c.snapshot.peak, 30)
    }

    func testRoundsThatDoNotFillTheWindowLeaveItAlone() {
        let c = AdaptiveConcurrency(initial: 16, ceiling: 128, minimumRound: 0)
        drive(c, knee: 1000, windowFull: false)
        XCTAssertEqual(c.snapshot, AdaptiveConcurrency.Snapshot(limit: 16, peak: 16, settled: false))
        // Once demand fills the window, it grows.
        drive(c, knee: 1000, rounds: 3)
        XCTAssertGreaterThan(c.limit, 16)
    }

    /// The transport opens as many connections to one host as the transfers' limits can ask
    /// for: with fewer, the limit would grow past what a round trip can carry.
    func testTheTransportHasAConnectionForEveryRequestTheLimitsAllow() {
        let transport = TransportConfiguration()
        XCTAssertGreaterThanOrEqual(transport.maxConnectionsPerHost, MultipartFetchConfiguration(datacenters: [:]).maxConcurrentParts)
        XCTAssertGreaterThanOrEqual(transport.maxConnectionsPerHost, MultipartUpload.maxConcurrentFiles)
        XCTAssertGreaterThanOrEqual(transport.handlePoolSize, transport.maxConnectionsPerHost)
        XCTAssertGreaterThanOrEqual(transport.maxTotalConnections, transport.maxConnectionsPerHost)
    }

    func testFixedLimitDoesNotMove() {
        let c = AdaptiveConcurrency(initial: 8, floor: 8, ceiling: 8, minimumRound: 0)
        drive(c, knee: 1000)
        XCTAssertEqual(c.limit, 8)
    }
}
