import XCTest
import Yams

@testable import Jobs

/// The hand-written scalar typing agrees with Yams' default (regular-expression) resolver.
final class PlainScalarResolverTests: XCTestCase {
    func testAgreesWithTheRegularExpressionResolver() {
        var samples = [
            "", "~", "null", "Null", "NULL", "nul", "yes", "No", "ON", "off", "true", "False", "TRUE", "tru", "y", "n",
            "0", "00", "07", "08", "0o17", "0o", "0b101", "0b", "0b2", "0x1F", "0x", "0xg", "-1", "+1", "1_000", "12:30", "1:30:45",
            "190:20:30", "1:60", "0:30", "-3:25", "1.5", "1.", ".5", ".5e+3", ".5e3", "1e5", "1.5e-3", "1.5E+10", "-.inf", "+.Inf",
            ".INF", ".nan", "-.nan", ".NaN", "1:30.5", "12:30:15.25", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z", "2002-12-14", "2001-1-1 1:00:00", "2001-1-1", "2001-12-14 21:59",
            "30s", "5m", "1h30m", "10MiB", "1.5GiB", "@hourly", "*/15 * * * *", "Europe/Berlin", "time-based-cleanup", "v1.2", "1.2.3",
            "<<", "=", "-", "+", "_", "1__", "0_7", "9e9", "1e", "1e+", "+.5", "-0", "0.0", "01.5", "1_0.0_1",
        ]
        for n in [1, 42, 100_000, -7] { samples.append(String(n)) }
        for text in samples {
            let expected: ConfigNode.ScalarType
            switch Resolver.default.resolveTag(of: Node(text)) {
            case .bool: expected = .bool
            case .int: expected = .int
            case .float: expected = .float
            case .null: expected = .null
            case .timestamp: expected = .timestamp
            default: expected = .string
            }
            XCTAssertEqual(PlainScalarResolver.resolve(text), expected, "'\(text)'")
        }
    }
}
