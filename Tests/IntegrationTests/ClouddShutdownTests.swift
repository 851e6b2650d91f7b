import Foundation
import TestSupport
import XCTest

/// The reference server stops cleanly on SIGTERM, whatever it served before: every test and
/// benchmark stops it that way, and a crash at exit would hide behind a passing test.
final class ClouddShutdownTests: XCTestCase {
    func testStopsCleanlyAfterServingASyncEveryTime() throws {
        for round in 1...8 {
            let cloud = try ClouddProcess(["--seed", "\(70 + round)", "--dcs", "2", "--peers", "4", "--messages-per-peer", "20", "--bulk-files", "50:10K-100K"])
            let h = JobrunHarness()
            try h.configureAccount(for: cloud)
            try h.syncOnce(initialMessages: 20)
            cloud.process.signal(SIGTERM)
            let status = cloud.process.wait(timeout: 60)
            XCTAssertEqual(status, 0, "round \(round): cloudd did not exit cleanly on SIGTERM: \(Self.crashReport(cloud.process.stderr))")
        }
    }

    /// The crashed thread's frames and what follows, from a backtrace on stderr (or its tail).
    static func crashReport(_ stderr: String) -> String {
        guard let crashed = stderr.range(of: "crashed:") else { return String(stderr.suffix(2000)) }
        return String(stderr[crashed.lowerBound...].prefix(6000))
    }
}
