import Foundation
import XCTest

@testable import Jobs

/// cron → OnCalendar: the union of the systemd expressions fires exactly when cron would.
final class SystemdCalendarTests: XCTestCase {
    func testExpressionShapes() throws {
        let table: [(String, [String])] = [
            ("*/5 * * * *", ["*-*-* *:00/5:00"]),
            ("@hourly", ["*-*-* *:00:00"]),
            ("@daily", ["*-*-* 00:00:00"]),
            ("@weekly", ["Sun *-*-* 00:00:00"]),
            ("0 9 * * MON-FRI", ["Mon..Fri *-*-* 09:00:00"]),
            ("0 0 13 * FRI", ["Fri *-*-* 00:00:00", "*-*-13 00:00:00"]),
            ("0 0 */2 * MON", ["Mon *-*-01/2 00:00:00"]),
            ("1-10/2 * * * *", ["*-*-* *:01,03,05,07,09:00"]),
            ("0 0 * * 5-7", ["Fri,Sat,Sun *-*-* 00:00:00"]),
            ("30 3 1 JAN,JUL *", ["*-01,07-01 03:30:00"]),
        ]
        for (cron, expected) in table {
            XCTAssertEqual(SystemdCalendar.expressions(for: try CronSchedule(cron)), expected, cron)
        }
        XCTAssertEqual(
            SystemdCalendar.expressions(for: try CronSchedule("@daily"), timeZone: TimeZone(identifier: "Europe/Berlin")),
            ["*-*-* 00:00:00 Europe/Berlin"])
    }

    /// Fire times from `systemd-analyze calendar` for the union of expressions, as Unix seconds.
    private func systemdFires(_ expressions: [String], base: String, iterations: Int, analyze: String) throws -> [Int] {
        var all = Set<Int>()
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.timeZone = TimeZone(identifier: "UTC")
        parser.dateFormat = "yyyy-MM-dd HH:mm:ss"
        for expression in expressions {
            let (status, out, err) = try TestPaths.run(
                analyze, ["calendar", "--iterations=\(iterations)", "--base-time=\(base)", expression],
                environment: ["TZ": "UTC", "PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0"])
            XCTAssertEqual(status, 0, "\(expression): \(err)")
            for line in out.split(separator: "\n") where line.contains("Next elapse:") || line.contains("Iter. #") {
                // "    Next elapse: Sun 2026-11-22 00:00:00 UTC"
                let parts = line.split(separator: " ")
                guard parts.count >= 4, let date = parser.date(from: "\(parts[parts.count - 3]) \(parts[parts.count - 2])") else { continue }
                all.insert(Int(date.timeIntervalSince1970))
            }
        }
        return all.sorted()
    }

    func testUnionMatchesCronFireTimes() throws {
        guard let analyze = TestPaths.which("systemd-analyze") else {
            throw XCTSkip("systemd-analyze is not installed; cannot compare with systemd's calendar")
        }
        let utc = TimeZone(identifier: "UTC")!
        let baseText = "2026-11-21 10:00:30 UTC"
        let base = CronScheduleTests.date("2026-11-21T10:00:30Z")
        let cases: [(String, TimeZone?, String, Date)] = [
            ("*/5 * * * *", nil, baseText, base),
            ("0 * * * *", nil, baseText, base),
            ("@daily", nil, baseText, base),
            ("@weekly", nil, baseText, base),
            ("@monthly", nil, baseText, base),
            ("@yearly", nil, baseText, base),
            ("1-10/2 * * * *", nil, baseText, base),
            ("*/7 */5 */3 */2 *", nil, baseText, base),
            ("10-50/20 8-18 * * *", nil, baseText, base),
            ("0 9 * * MON-FRI", nil, baseText, base),
            ("15 */4 * * SAT,SUN", nil, baseText, base),
            ("0 22 * * 1-5", nil, baseText, base),
            ("0 0 13 * FRI", nil, baseText, base),
            ("0 0 1,15 * SUN", nil, baseText, base),
            ("0 0 1-7 * MON", nil, baseText, base),
            ("0 0 */2 * MON", nil, baseText, base),
            ("0 0 * * 5-7", nil, baseText, base),
            ("0 12 31 * *", nil, baseText, base),
            ("0 0 29 2 *", nil, baseText, base),
            ("0 0 31 2 MON", nil, baseText, base),
            ("30 3 * JAN,JUL *", nil, baseText, base),
            ("5,35 * * * *", nil, baseText, base),
            ("59 23 31 12 *", nil, baseText, base),
            // Across DST: hourly and half-hourly schedules agree in both directions.
            ("0 * * * *", TimeZone(identifier: "Europe/Berlin"), "2027-03-27 12:00:00 UTC", CronScheduleTests.date("2027-03-27T12:00:00Z")),
            ("*/30 * * * *", TimeZone(identifier: "Europe/Berlin"), "2027-10-30 12:00:00 UTC", CronScheduleTests.date("2027-10-30T12:00:00Z")),
            ("0 * * * *", TimeZone(identifier: "America/New_York"), "2027-03-13 12:00:00 UTC", CronScheduleTests.date("2027-03-13T12:00:00Z")),
            ("*/30 * * * *", TimeZone(identifier: "America/New_York"), "2027-11-06 12:00:00 UTC", CronScheduleTests.date("2027-11-06T12:00:00Z")),
            ("30 1 * * *", TimeZone(identifier: "America/New_York"), "2027-11-05 12:00:00 UTC", CronScheduleTests.date("2027-11-05T12:00:00Z")),
        ]
        for (cron, zone, baseString, baseDate) in cases {
            let schedule = try CronSchedule(cron)
            let tz = zone ?? utc
            // A year of cron fires (at most 300; at least 3 even for Feb 29).
            var fires = schedule.fires(after: baseDate, through: baseDate.addingTimeInterval(366 * 86_400), in: tz, limit: 300)
            if fires.count < 3 { fires = schedule.fires(after: baseDate, through: baseDate.addingTimeInterval(12 * 366 * 86_400), in: tz, limit: 3) }
            let expected = fires.map { Int($0.timeIntervalSince1970) }
            let expressions = SystemdCalendar.expressions(for: schedule, timeZone: zone)
            let actual = try systemdFires(expressions, base: baseString, iterations: expected.count, analyze: analyze)
            XCTAssertEqual(Array(actual.prefix(expected.count)), expected, "\(cron) → \(expressions)")
        }
    }
}
