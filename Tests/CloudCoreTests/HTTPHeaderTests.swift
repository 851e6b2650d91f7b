import CloudCore
import XCTest

/// Header names are matched as HTTP says: ASCII letters in any case, every other byte exactly.
final class HTTPHeaderTests: XCTestCase {
    func testNamesMatchIgnoringASCIICaseOnly() {
        let header = HTTPHeader("X-Part-SHA256", "00")
        XCTAssertTrue(header.isNamed("X-Part-SHA256"))
        XCTAssertTrue(header.isNamed("x-part-sha256"))
        XCTAssertTrue(header.isNamed("X-PART-SHA256"))
        XCTAssertFalse(header.isNamed("X-Part-SHA25"), "a prefix is another name")
        XCTAssertFalse(header.isNamed("X-Part-SHA2566"), "so is a longer name")
        XCTAssertFalse(header.isNamed("X_Part-SHA256"))
        XCTAssertFalse(header.isNamed(""))
        // Bytes that differ from a letter by the case bit are not letters: '@' is not '`', '[' is
        // not '{', '^' is not '~'.
        XCTAssertFalse(HTTPHeader("A@", "").isNamed("a`"))
        XCTAssertFalse(HTTPHeader("x[", "").isNamed("x{"))
        XCTAssertFalse(HTTPHeader("^", "").isNamed("~"))
        XCTAssertTrue(HTTPHeader("", "").isNamed(""))
    }

    func testResponseHeaderLookupIgnoresCaseAndTakesTheFirst() {
        let response = HTTPResponse(
            status: 200, headers: [HTTPHeader("Content-Type", "a"), HTTPHeader("content-type", "b"), HTTPHeader("X-File-Size", "12")],
            body: Data(), bytesReceived: 0, effectiveURL: "", httpVersion: 1, newConnections: 0, totalTime: 0)
        XCTAssertEqual(response.header("CONTENT-TYPE"), "a")
        XCTAssertEqual(response.header("x-file-size"), "12")
        XCTAssertNil(response.header("X-File-Sizes"))
    }
}
