import Foundation

/// A 5-field cron schedule (minute hour day-of-month month day-of-week) with Vixie-cron semantics.
///
/// Fields accept `*`, `N`, `N-M`, `*/S`, `N-M/S` and comma lists; months `JAN`–`DEC` and days
/// `SUN`–`SAT` (case-insensitive) where numbers are allowed; day-of-week 7 is Sunday. Macros:
/// `@hourly @daily @midnight @weekly @monthly @yearly @annually`.
///
/// Day rule (as Vixie cron and cronie): if day-of-month or day-of-week *starts with* `*`, a day
/// must match both (so the other field decides when one is a plain `*`); if both are restricted,
/// a day matching either fires (`0 0 1,15 * MON` = the 1st, the 15th and every Monday).
///
/// DST (see `nextFire(after:in:)`): a time in a spring-forward gap fires once, at the first
/// valid minute after the gap; a time repeated by fall-back fires once, at its first occurrence.
public struct CronSchedule: Sendable, Hashable, CustomStringConvertible {
    public static let expected =
        "5 cron fields (minute hour day-of-month month day-of-week) such as */15 * * * *, or @hourly, @daily, @weekly, @monthly, @yearly"

    /// The expression as written (macros kept, e.g. `@daily`).
    public let expression: String
    /// Bit i set = minute i fires.
    public let minuteBits: UInt64
    public let hourBits: UInt64
    /// Bits 1…31.
    public let dayOfMonthBits: UInt64
    /// Bits 1…12.
    public let monthBits: UInt64
    /// Bits 0…6, Sunday = 0.
    public let dayOfWeekBits: UInt64
    /// The day-of-month field started with `*` (Vixie's `DOM_STAR`).
    public let dayOfMonthStar: Bool
    /// The day-of-week field started with `*` (Vixie's `DOW_STAR`).
    public let dayOfWeekStar: Bool

    public var description: String { expression }

    public var minutes: [Int] { Self.values(minuteBits, 0...59) }
    public var hours: [Int] { Self.values(hourBits, 0...23) }
    public var daysOfMonth: [Int] { Self.values(dayOfMonthBits, 1...31) }
    public var months: [Int] { Self.values(monthBits, 1...12) }
    public var daysOfWeek: [Int] { Self.values(dayOfWeekBits, 0...6) }

    /// True when days are chosen by day-of-month OR day-of-week (both fields restricted).
    public var usesDayOr: Bool { !dayOfMonthStar && !dayOfWeekStar }

    static func values(_ bits: UInt64, _ range: ClosedRange<Int>) -> [Int] { range.filter { bits & (1 << UInt64($0)) != 0 } }

    init(expression: String, minute: UInt64, hour: UInt64, dom: UInt64, month: UInt64, dow: UInt64, domStar: Bool, dowStar: Bool) {
        self.expression = expression
        minuteBits = minute
        hourBits = hour
        dayOfMonthBits = dom
        monthBits = month
        dayOfWeekBits = dow
        dayOfMonthStar = domStar
        dayOfWeekStar = dowStar
    }

    /// Parses and validates; a schedule that can never fire (`0 0 30 2 *`) is an error.
    public static func parse(_ text: String) -> Result<CronSchedule, ConfigValueError> {
        CronParser.parse(text)
    }

    /// Parses, throwing `ConfigValueError`.
    public init(_ text: String) throws {
        self = try CronParser.parse(text).get()
    }

    /// Does a civil date (in the schedule's time zone) fire on some minute?
    public func matchesDay(year: Int, month: Int, day: Int) -> Bool {
        guard monthBits & (1 << UInt64(month)) != 0 else { return false }
        let domHit = dayOfMonthBits & (1 << UInt64(day)) != 0
        let dowHit = dayOfWeekBits & (1 << UInt64(CivilTime.weekday(days: CivilTime.days(year: year, month: month, day: day)))) != 0
        return usesDayOr ? (domHit || dowHit) : (domHit && dowHit)
    }

    /// The first time strictly after `date` at which the schedule fires, in `timeZone`.
    ///
    /// Wall-clock times are matched in `timeZone`. A matching time that does not exist (spring
    /// forward) fires at the first valid instant after the gap, once even if several minutes of
    /// the gap match; a time that exists twice (fall back) fires only at its first occurrence.
    /// Returns nil only if nothing fires within 400 years (impossible for a validated schedule).
    public func nextFire(after date: Date, in timeZone: TimeZone) -> Date? {
        let afterSeconds = Int(floor(date.timeIntervalSince1970))
        let offset = timeZone.secondsFromGMT(for: date)
        let wallStartMinute = CivilTime.floorDiv(afterSeconds + offset, 60) + 1
        var dayNumber = CivilTime.floorDiv(wallStartMinute, 1440)
        var startMinuteOfDay = wallStartMinute - dayNumber * 1440
        let lastDay = dayNumber + 146_097  // one Gregorian cycle
        while dayNumber <= lastDay {
            let civil = CivilTime.date(days: dayNumber)
            if monthBits & (1 << UInt64(civil.month)) == 0 {
                // Skip to the first day of the next month.
                let nextMonth = civil.month == 12 ? (civil.year + 1, 1) : (civil.year, civil.month + 1)
                dayNumber = CivilTime.days(year: nextMonth.0, month: nextMonth.1, day: 1)
                startMinuteOfDay = 0
                continue
            }
            if matchesDay(year: civil.year, month: civil.month, day: civil.day) {
                for hour in startMinuteOfDay / 60..<24 where hourBits & (1 << UInt64(hour)) != 0 {
                    let firstMinute = hour == startMinuteOfDay / 60 ? startMinuteOfDay % 60 : 0
                    for minute in firstMinute..<60 where minuteBits & (1 << UInt64(minute)) != 0 {
                        let wall = dayNumber * 86_400 + hour * 3600 + minute * 60
                        if let fire = resolve(wallSeconds: wall, after: afterSeconds, in: timeZone) {
                            return Date(timeIntervalSince1970: TimeInterval(fire))
                        }
                    }
                }
            }
            dayNumber += 1
            startMinuteOfDay = 0
        }
        return nil
    }

    /// The last fire at or before `date` (for `startingDeadline`: a run started by a timer or by
    /// hand can tell how late it is against the fire it stands for). Nil if none within 400 years.
    public func previousFire(atOrBefore date: Date, in timeZone: TimeZone) -> Date? {
        var window: TimeInterval = 3600
        while window < 401 * 366 * 86_400 {
            var cursor = date.addingTimeInterval(-window)
            var last: Date?
            while let next = nextFire(after: cursor, in: timeZone), next <= date {
                last = next
                cursor = next
            }
            if let last { return last }
            window *= 8
        }
        return nil
    }

    /// Every fire in `(start, end]`, at most `limit`.
    public func fires(after start: Date, through end: Date, in timeZone: TimeZone, limit: Int = 100_000) -> [Date] {
        var result: [Date] = []
        var cursor = start
        while result.count < limit, let next = nextFire(after: cursor, in: timeZone), next <= end {
            result.append(next)
            cursor = next
        }
        return result
    }

    /// The instant a matching wall-clock time fires, or nil if it must be skipped.
    private func resolve(wallSeconds wall: Int, after: Int, in timeZone: TimeZone) -> Int? {
        let before = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(wall - 86_400)))
        let later = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(wall + 86_400)))
        var instants: [Int] = []
        for offset in Set([before, later]) {
            let instant = wall - offset
            if timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(instant))) == offset {
                instants.append(instant)
            }
        }
        instants.sort()
        if let first = instants.first {
            // Normal time, or the first occurrence of a repeated one; the second is never used.
            return first > after ? first : nil
        }
        // In a gap: fire at the end of the gap (the first instant with the later offset).
        var low = wall - max(before, later)
        var high = wall - min(before, later)
        while high - low > 1 {
            let middle = (low + high) / 2
            if timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(middle))) == later {
                high = middle
            } else {
                low = middle
            }
        }
        return high > after ? high : nil
    }
}
