import Synchronization
import XCTest

@testable import CloudCore

/// Urgent parts (`.maximum`) neither wait for a slot nor share the transport with background
/// transfers: the part limiter lets them past a full window and holds other parts back while
/// they run; a transport thread pauses its other transfers and keeps new ones waiting.
final class UrgentPartTests: XCTestCase {
    func testUrgentPartPassesAFullWindowAndHoldsOtherPartsBack() async throws {
        let limiter = PartLimiter(limit: 1)
        try await limiter.acquire()  // the window is full
        try await limiter.acquire(urgent: true)  // ... and an urgent part starts all the same
        limiter.release()  // the background part ends while the urgent one runs
        let started = Atomic<Bool>(false)
        let waiting = Task {
            try await limiter.acquire()
            started.store(true, ordering: .sequentiallyConsistent)
            limiter.release()
        }
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertFalse(started.load(ordering: .sequentiallyConsistent), "a background part waits while an urgent one runs")
        limiter.release(urgent: true)
        try await waiting.value
        XCTAssertTrue(started.load(ordering: .sequentiallyConsistent), "it starts once the urgent part has ended")
    }

    func testTransportThreadHoldsOtherTransfersWhileAnUrgentOneRuns() {
        let urgentRequests = UrgentRequests()
        let hold = TransferHold(urgent: urgentRequests)
        let configuration = TransportConfiguration()
        let background = CurlTransfer(request: HTTPRequest(url: "http://127.0.0.1:1/big"), configuration: configuration)
        var request = HTTPRequest(url: "http://127.0.0.1:1/header")
        request.urgent = true
        let urgent = CurlTransfer(request: request, configuration: configuration)
        let later = CurlTransfer(request: HTTPRequest(url: "http://127.0.0.1:1/other"), configuration: configuration)

        XCTAssertTrue(hold.admitReceive(background), "nothing urgent: every transfer receives")
        XCTAssertFalse(hold.mustWait(later))
        urgentRequests.begin()
        XCTAssertFalse(hold.admitReceive(background), "paused while an urgent request runs")
        XCTAssertTrue(background.isHeld)
        XCTAssertTrue(hold.admitReceive(urgent), "the urgent transfer itself receives")
        XCTAssertFalse(hold.mustWait(urgent))
        XCTAssertTrue(hold.mustWait(later), "a new background transfer waits to start")
        XCTAssertEqual(hold.release().count, 0, "nothing goes on while the urgent request runs")
        urgentRequests.end()
        let started = hold.release()
        XCTAssertTrue(started.count == 1 && started[0] === later, "the waiting transfer starts")
        XCTAssertFalse(background.isHeld, "the paused transfer goes on")
        XCTAssertTrue(hold.admitReceive(background))
        XCTAssertEqual(hold.release().count, 0)
    }
}
