import XCTest

@testable import MediaBox

/// The priority a part carries out of a resource: that of the callers it serves. The header
/// ranks first within the resource, but counts as `.maximum` only when someone waits for it.
final class PartPriorityTests: XCTestCase {
    func testHeaderOfABackgroundPrefixIsNotUrgent() throws {
        let demand = MediaResourceFetchRanges(headerSize: 40_000, size: 5_000_000)
        _ = try XCTUnwrap(demand.add([0..<(2 << 20)], priority: .default))
        let first = try XCTUnwrap(demand.nextPrioritizedPart(partSize: 128 << 10))
        XCTAssertEqual(first.range, 0..<(128 << 10), "the header first")
        XCTAssertEqual(first.priority, .default, "as urgent as the prefetch that wants it")
    }

    func testHeaderSomeoneWaitsForIsMaximum() throws {
        let demand = MediaResourceFetchRanges(headerSize: 40_000, size: 5_000_000)
        _ = try XCTUnwrap(demand.add([0..<40_000], priority: .maximum))
        XCTAssertEqual(demand.nextPrioritizedPart(partSize: 128 << 10)?.priority, .maximum)
    }

    func testHeaderFetchedForOtherBytesTakesTheirPriority() throws {
        let demand = MediaResourceFetchRanges(headerSize: 40_000, size: 5_000_000)
        _ = try XCTUnwrap(demand.add([4_000_000..<4_100_000], priority: .elevated))
        let header = try XCTUnwrap(demand.nextPrioritizedPart(partSize: 128 << 10))
        XCTAssertEqual(header.range.lowerBound, 0)
        XCTAssertEqual(header.priority, .elevated)
        XCTAssertEqual(demand.nextPrioritizedPart(partSize: 128 << 10)?.priority, .elevated)
    }
}
