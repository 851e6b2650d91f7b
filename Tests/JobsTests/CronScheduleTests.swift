import Foundation
import XCTest

@testable import Jobs

/// Table-driven next-fire tests against hand-checked times.
final class CronScheduleTests: XCTestCase {
    static let utc = TimeZone(identifier: "UTC")!

    static func date(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        guard let date = formatter.date(from: text) else { fatalError("bad date \(text)") }
        return date
    }

    static func iso(_ date: Date?) -> String {
        guard let date else { return "nil" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    func testNextFireTableUTC() throws {
        // (expression, after, expected next fire) — 2026-11-21 is a Saturday.
        let table: [(String, String, String)] = [
            ("* * * * *", "2026-11-21T10:00:30Z", "2026-11-21T10:01:00Z"),
            ("*/5 * * * *", "2026-11-21T10:03:00Z", "2026-11-21T10:05:00Z"),
            ("*/5 * * * *", "2026-11-21T10:05:00Z", "2026-11-21T10:10:00Z"),
            ("0 * * * *", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"),
            ("@hourly", "2026-11-21T10:59:59Z", "2026-11-21T11:00:00Z"),
            ("@daily", "2026-11-21T10:00:00Z", "2026-11-22T00:00:00Z"),
            ("@midnight", "2026-11-21T23:59:00Z", "2026-11-22T00:00:00Z"),
            ("@weekly", "2026-11-21T10:00:00Z", "2026-11-22T00:00:00Z"),
            ("@monthly", "2026-11-21T10:00:00Z", "2026-12-01T00:00:00Z"),
            ("@yearly", "2026-11-21T10:00:00Z", "2027-01-01T00:00:00Z"),
            ("@annually", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"),
            ("1-10/2 * * * *", "2026-11-21T10:03:00Z", "2026-11-21T10:05:00Z"),
            ("1-10/2 * * * *", "2026-11-21T10:09:00Z", "2026-11-21T11:01:00Z"),
            ("0 */6 * * *", "2026-11-21T10:00:00Z", "2026-11-21T12:00:00Z"),
            ("5,35 * * * *", "2026-11-21T10:35:00Z", "2026-11-21T11:05:00Z"),
            ("0 9 * * MON-FRI", "2026-11-21T10:00:00Z", "2026-11-23T09:00:00Z"),
            ("0 9 * * mon-fri", "2026-11-21T10:00:00Z", "2026-11-23T09:00:00Z"),
            ("0 22 * * 1-5", "2026-11-27T22:00:00Z", "2026-11-30T22:00:00Z"),
            ("0 0 * jan,JUL *", "2026-11-21T10:00:00Z", "2027-01-01T00:00:00Z"),
            ("0 0 1 Jul *", "2026-11-21T10:00:00Z", "2027-07-01T00:00:00Z"),
            ("0 0 * * 7", "2026-11-21T10:00:00Z", "2026-11-22T00:00:00Z"),
            ("0 0 * * 0", "2026-11-21T10:00:00Z", "2026-11-22T00:00:00Z"),
            ("0 0 * * 5-7", "2026-11-21T10:00:00Z", "2026-11-22T00:00:00Z"),
            ("0 0 * * SUN,SAT", "2026-11-21T10:00:00Z", "2026-11-22T00:00:00Z"),
            // Day-of-month OR day-of-week (both restricted): the 23rd (a Monday) comes before Friday the 27th.
            ("0 0 23 * FRI", "2026-11-21T10:00:00Z", "2026-11-23T00:00:00Z"),
            ("0 0 23 * FRI", "2026-11-23T00:00:00Z", "2026-11-27T00:00:00Z"),
            ("0 0 13 * FRI", "2026-12-05T00:00:00Z", "2026-12-11T00:00:00Z"),
            ("0 0 13 * FRI", "2026-12-11T00:00:00Z", "2026-12-13T00:00:00Z"),
            // A field starting with '*' makes it AND (Vixie's DOM_STAR): odd days that are Mondays.
            ("0 0 */2 * MON", "2026-11-21T10:00:00Z", "2026-11-23T00:00:00Z"),
            ("0 0 */2 * MON", "2026-11-23T00:00:00Z", "2026-12-07T00:00:00Z"),
            // day-of-week '*': day-of-month decides.
            ("0 0 15 * *", "2026-11-21T10:00:00Z", "2026-12-15T00:00:00Z"),
            // 31st of the month skips short months.
            ("0 12 31 * *", "2026-11-21T10:00:00Z", "2026-12-31T12:00:00Z"),
            ("0 12 31 * *", "2026-12-31T12:00:00Z", "2027-01-31T12:00:00Z"),
            ("0 12 31 * *", "2027-01-31T12:00:00Z", "2027-03-31T12:00:00Z"),
            // Feb 29 waits for the next leap year.
            ("0 0 29 2 *", "2026-11-21T10:00:00Z", "2028-02-29T00:00:00Z"),
            ("0 0 29 2 *", "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"),
            ("15 14 1 * *", "2026-11-21T10:00:00Z", "2026-12-01T14:15:00Z"),
            ("59 23 31 12 *", "2026-11-21T10:00:00Z", "2026-12-31T23:59:00Z"),
            ("0 0 1 1 *", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"),
            ("0 0 31 2 MON", "2026-11-21T10:00:00Z", "2027-02-01T00:00:00Z"),  // Mondays of February
            ("0,30 8-9 * * *", "2026-11-21T09:30:00Z", "2026-11-22T08:00:00Z"),
        ]
        for (expression, after, expected) in table {
            let schedule = try CronSchedule(expression)
            let next = schedule.nextFire(after: Self.date(after), in: Self.utc)
            XCTAssertEqual(Self.iso(next), expected, "\(expression) after \(after)")
        }
    }

    func testPreviousFire() throws {
        let table: [(String, String, String)] = [
            ("*/15 * * * *", "2026-11-21T10:07:00Z", "2026-11-21T10:00:00Z"),
            ("*/15 * * * *", "2026-11-21T10:15:00Z", "2026-11-21T10:15:00Z"),
            ("30 3 * * *", "2026-11-21T03:29:59Z", "2026-11-20T03:30:00Z"),
            ("0 0 29 2 *", "2026-11-21T10:00:00Z", "2024-02-29T00:00:00Z"),
            ("@yearly", "2026-11-21T10:00:00Z", "2026-01-01T00:00:00Z"),
        ]
        for (expression, at, expected) in table {
            let previous = try CronSchedule(expression).previousFire(atOrBefore: Self.date(at), in: Self.utc)
            XCTAssertEqual(Self.iso(previous), expected, "\(expression) at or before \(at)")
        }
    }

    func testDaylightSavingTime() throws {
        let newYork = TimeZone(identifier: "America/New_York")!
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        // New York 2027: spring forward Mar 14 02:00 EST → 03:00 EDT (07:00Z);
        // fall back Nov 7 02:00 EDT → 01:00 EST (06:00Z).
        // Berlin 2027: spring forward Mar 28 02:00 CET → 03:00 CEST (01:00Z);
        // fall back Oct 31 03:00 CEST → 02:00 CET (01:00Z).
        let table: [(String, TimeZone, String, String)] = [
            // A time in the gap fires once, at the first valid minute after it (03:00 EDT).
            ("30 2 * * *", newYork, "2027-03-13T12:00:00Z", "2027-03-14T07:00:00Z"),
            ("30 2 * * *", newYork, "2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"),
            ("*/15 2 * * *", newYork, "2027-03-14T06:00:00Z", "2027-03-14T07:00:00Z"),
            ("*/15 2 * * *", newYork, "2027-03-14T07:00:00Z", "2027-03-15T06:00:00Z"),
            ("0 3 * * *", newYork, "2027-03-14T06:00:00Z", "2027-03-14T07:00:00Z"),
            ("0 1 * * *", newYork, "2027-03-13T12:00:00Z", "2027-03-14T06:00:00Z"),
            // A repeated time fires once, at its first occurrence (EDT).
            ("30 1 * * *", newYork, "2027-11-07T04:00:00Z", "2027-11-07T05:30:00Z"),
            ("30 1 * * *", newYork, "2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"),
            ("*/30 * * * *", newYork, "2027-11-07T05:30:00Z", "2027-11-07T07:00:00Z"),
            ("0 2 * * *", newYork, "2027-11-07T04:00:00Z", "2027-11-07T07:00:00Z"),
            ("30 2 * * *", berlin, "2027-03-27T12:00:00Z", "2027-03-28T01:00:00Z"),
            ("30 2 * * *", berlin, "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"),
            ("30 2 * * *", berlin, "2027-10-30T12:00:00Z", "2027-10-31T00:30:00Z"),
            ("30 2 * * *", berlin, "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"),
            ("0 0 * * *", berlin, "2027-03-27T12:00:00Z", "2027-03-27T23:00:00Z"),
            ("0 0 * * *", berlin, "2027-07-01T12:00:00Z", "2027-07-01T22:00:00Z"),
        ]
        for (expression, zone, after, expected) in table {
            let next = try CronSchedule(expression).nextFire(after: Self.date(after), in: zone)
            XCTAssertEqual(Self.iso(next), expected, "\(expression) in \(zone.identifier) after \(after)")
        }
    }

    func testFiresAreStrictlyIncreasingAcrossDSTYear() throws {
        for zone in ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe"] {
            let tz = TimeZone(identifier: zone)!
            let fires = try CronSchedule("*/20 * * * *").fires(
                after: Self.date("2027-01-01T00:00:00Z"),
                through: Self.date("2028-01-01T00:00:00Z"), in: tz)
            XCTAssertGreaterThan(fires.count, 26_000, zone)
            XCTAssertTrue(zip(fires, fires.dropFirst()).allSatisfy { $0 < $1 }, zone)
        }
    }

    func testNeverFiringSchedulesAreRejected() {
        for expression in ["0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "0 0 31 4 *", "0 0 30,31 feb *", "0 0 31 apr-apr *"] {
            guard case .failure(let error) = CronSchedule.parse(expression) else {
                XCTFail("\(expression) should be rejected"); continue
            }
            XCTAssertTrue(error.message.contains("never fires"), "\(expression): \(error.message)")
            XCTAssertEqual(error.offset, 4, expression)  // points at the day-of-month field
        }
        // OR with a weekday still fires, and Feb 29 fires in leap years.
        XCTAssertNoThrow(try CronSchedule("0 0 30 2 MON"))
        XCTAssertNoThrow(try CronSchedule("0 0 29 2 *"))
    }

    func testSyntaxErrorsPointAtTheField() {
        let table: [(String, Int, String)] = [
            ("61 * * * *", 0, "minute"),
            ("* 24 * * *", 2, "hour"),
            ("* * 0 * *", 4, "day-of-month"),
            ("* * * 13 *", 6, "month"),
            ("* * * * 8", 8, "day-of-week"),
            ("*/0 * * * *", 0, "step"),
            ("* * * * FRI-MON", 8, "backwards"),
            ("* * * *", 7, "5 fields"),
            ("* * * * * *", 10, "5 fields"),
            ("@reboot", 0, "@reboot"),
            ("1,,2 * * * *", 2, "empty"),
            ("5/2 * * * *", 0, "step needs a range"),
            ("* * * FOO *", 6, "month"),
            ("", 0, "5 fields"),
        ]
        for (expression, offset, fragment) in table {
            guard case .failure(let error) = CronSchedule.parse(expression) else {
                XCTFail("\(expression) should be rejected"); continue
            }
            XCTAssertEqual(error.offset, offset, "\(expression): \(error.message)")
            XCTAssertTrue(error.message.contains(fragment), "\(expression): \(error.message)")
        }
    }
}
