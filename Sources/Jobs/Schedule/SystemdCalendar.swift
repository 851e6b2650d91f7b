import Foundation

/// Converts a `CronSchedule` to systemd `OnCalendar=` expressions whose union fires exactly when
/// cron would.
///
/// systemd ANDs a weekday with a date, so a cron schedule with both day-of-month and day-of-week
/// restricted (Vixie's OR) becomes two expressions, one per day rule. Steps become `a/b` when they
/// run to the field's end, otherwise explicit lists (`1..10/2` → `01,03,05,07,09`).
///
/// Time zone: without one, systemd (like cron) reads the expression in the host's local time;
/// when the job file names `timeZone`, it is appended (`… Europe/Berlin`, systemd ≥ 235).
public enum SystemdCalendar {
    private static let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// One or two `OnCalendar=` values.
    public static func expressions(for schedule: CronSchedule, timeZone: TimeZone? = nil) -> [String] {
        let months = field(schedule.months, 1...12)
        let days = field(schedule.daysOfMonth, 1...31)
        let time = "\(field(schedule.hours, 0...23)):\(field(schedule.minutes, 0...59)):00"
        let weekdays = weekdayList(schedule.daysOfWeek)
        let zone = timeZone.map { " " + $0.identifier } ?? ""
        if schedule.usesDayOr {
            return ["\(weekdays) *-\(months)-* \(time)\(zone)", "*-\(months)-\(days) \(time)\(zone)"]
        }
        let dayPart = schedule.daysOfWeek.count == 7 ? "" : weekdays + " "
        return ["\(dayPart)*-\(months)-\(days) \(time)\(zone)"]
    }

    /// Formats one numeric field: `*`, `a/b`, or a list with `a..b` runs, two digits each.
    static func field(_ values: [Int], _ range: ClosedRange<Int>) -> String {
        if values.count == range.count { return "*" }
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if values.count >= 3 {
            let step = values[1] - values[0]
            let arithmetic = zip(values, values.dropFirst()).allSatisfy { $1 - $0 == step }
            if arithmetic, step > 1, values.last! + step > range.upperBound {
                return "\(pad(values[0]))/\(step)"
            }
        }
        return runs(values).map { $0.lowerBound == $0.upperBound ? pad($0.lowerBound) : "\(pad($0.lowerBound))..\(pad($0.upperBound))" }
            .joined(separator: ",")
    }

    private static func weekdayList(_ days: [Int]) -> String {
        // Ranges only within Mon..Sat; Sunday (0) is listed on its own, systemd's week starts on Monday.
        let weekdays = days.filter { $0 != 0 }
        var parts = runs(weekdays).map { run -> String in
            run.count >= 3
                ? "\(weekdayNames[run.lowerBound])..\(weekdayNames[run.upperBound])"
                : (run.lowerBound...run.upperBound).map { weekdayNames[$0] }.joined(separator: ",")
        }
        if days.contains(0) { parts.append("Sun") }
        return parts.joined(separator: ",")
    }

    private static func runs(_ values: [Int]) -> [ClosedRange<Int>] {
        var result: [ClosedRange<Int>] = []
        for value in values {
            if let last = result.last, last.upperBound + 1 == value {
                result[result.count - 1] = last.lowerBound...value
            } else {
                result.append(value...value)
            }
        }
        return result
    }
}
