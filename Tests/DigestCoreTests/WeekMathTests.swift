import Foundation
import Testing

@testable import DigestCore

/// Expected instants below are Unix seconds computed outside the code under test with
/// `TZ=<zone> date -d '<local date and time>' +%s` (GNU date, tzdata).

@Suite("ISOWeek")
struct ISOWeekTests {
    @Test(arguments: [
        ("2026-W47", 2026, 47), ("2026W47", 2026, 47), ("2026-w47", 2026, 47), ("2026-W01", 2026, 1),
        ("2026-W53", 2026, 53), ("2020-W53", 2020, 53), ("2025-W52", 2025, 52),
    ] as [(String, Int, Int)])
    func parsesValidWeeks(text: String, year: Int, week: Int) throws {
        let parsed = try ISOWeek(parsing: text)
        #expect(parsed.year == year && parsed.week == week)
    }

    @Test(arguments: ["", "2026", "2026-47", "W47", "26-W47", "2026-W4", "2026-W470", "2026-Wxx", "2026-W4x",
        " 2026-W47", "2026-W47 ", "2026--W47", "2026-W+1", "2026-W-1", "+999-W01", "２０２６-W47"])
    func rejectsMalformedText(text: String) {
        #expect(throws: WeekError.malformed(text)) { try ISOWeek(parsing: text) }
    }

    @Test(arguments: [("2025-W53", 52), ("2026-W00", 53), ("2026-W54", 53), ("2024-W53", 52)] as [(String, Int)])
    func rejectsWeeksTheYearDoesNotHave(text: String, weeks: Int) {
        #expect(throws: WeekError.noSuchWeek(text, weeksInYear: weeks)) { try ISOWeek(parsing: text) }
    }

    @Test(arguments: [
        (2004, 53), (2009, 53), (2015, 53), (2020, 53), (2024, 52), (2025, 52), (2026, 53), (2027, 52), (2032, 53),
    ])
    func weeksInYear(year: Int, weeks: Int) {
        #expect(ISOWeek.weeksInYear(year) == weeks)
        #expect(ISOWeek(year: year, week: weeks) != nil)
        #expect(ISOWeek(year: year, week: weeks + 1) == nil)
    }

    @Test(arguments: [
        ("2020-12-31", "2020-W53"), ("2021-01-03", "2020-W53"), ("2021-01-04", "2021-W01"),
        ("2024-12-29", "2024-W52"), ("2024-12-30", "2025-W01"), ("2025-12-28", "2025-W52"),
        ("2025-12-29", "2026-W01"), ("2026-01-01", "2026-W01"), ("2026-11-16", "2026-W47"),
        ("2026-11-22", "2026-W47"), ("2026-11-23", "2026-W48"), ("2026-12-31", "2026-W53"),
        ("2027-01-03", "2026-W53"), ("2027-01-04", "2027-W01"), ("2010-01-03", "2009-W53"),
        ("2008-12-29", "2009-W01"),
    ])
    func weekContainingDate(date: String, week: String) {
        let parts = date.split(separator: "-").map { Int($0)! }
        let civil = CivilDate(year: parts[0], month: parts[1], day: parts[2])
        #expect(ISOWeek(containing: civil).description == week)
    }

    @Test func mondaysAndNeighbours() throws {
        #expect(try ISOWeek(parsing: "2026-W47").monday == CivilDate(year: 2026, month: 11, day: 16))
        #expect(try ISOWeek(parsing: "2026-W01").monday == CivilDate(year: 2025, month: 12, day: 29))
        #expect(try ISOWeek(parsing: "2025-W01").monday == CivilDate(year: 2024, month: 12, day: 30))
        #expect(try ISOWeek(parsing: "2020-W53").monday == CivilDate(year: 2020, month: 12, day: 28))
        #expect(try ISOWeek(parsing: "2026-W01").previous.description == "2025-W52")
        #expect(try ISOWeek(parsing: "2026-W53").next.description == "2027-W01")
        #expect(try ISOWeek(parsing: "2021-W01").previous.description == "2020-W53")
        #expect(ISOWeek(year: 2026, week: 5)?.description == "2026-W05")
        #expect(ISOWeek(year: 2025, week: 52)! < ISOWeek(year: 2026, week: 1)!)
    }
}

@Suite("CivilDate")
struct CivilDateTests {
    @Test(arguments: [
        (1970, 1, 1, 0), (1969, 12, 31, -1), (2000, 2, 29, 11016), (2026, 11, 16, 20773), (1900, 3, 1, -25508),
        (2400, 2, 29, 157113),
    ])
    func daysSinceEpoch(year: Int, month: Int, day: Int, days: Int) {
        let date = CivilDate(year: year, month: month, day: day)
        #expect(date.daysSinceEpoch == days)
        #expect(CivilDate(daysSinceEpoch: days) == date)
    }

    @Test func roundTripsAndWeekdays() {
        for days in stride(from: -200_000, through: 200_000, by: 997) {
            let date = CivilDate(daysSinceEpoch: days)
            #expect(date.daysSinceEpoch == days)
            #expect(date.adding(days: 1).isoWeekday == date.isoWeekday % 7 + 1)
        }
        #expect(CivilDate(year: 1970, month: 1, day: 1).isoWeekday == 4)
        #expect(CivilDate(year: 2026, month: 11, day: 16).isoWeekday == 1)
        #expect(CivilDate(year: 2026, month: 3, day: 29).isoWeekday == 7)
        #expect(CivilDate(year: 2026, month: 1, day: 5).description == "2026-01-05")
    }
}

/// One zone's expected 2026-W47 window.
struct ZoneWindow: Sendable, CustomTestStringConvertible {
    let zone: String
    let previousStart: Int64, start: Int64, end: Int64, deliverAt: Int64
    var testDescription: String { zone }
}

@Suite("WeekCalendar")
struct WeekCalendarTests {
    static let w47: [ZoneWindow] = [
        ZoneWindow(zone: "UTC", previousStart: 1794182400, start: 1794787200, end: 1795392000, deliverAt: 1795424400),
        ZoneWindow(zone: "Pacific/Kiritimati", previousStart: 1794132000, start: 1794736800, end: 1795341600, deliverAt: 1795374000),
        ZoneWindow(zone: "Pacific/Pago_Pago", previousStart: 1794222000, start: 1794826800, end: 1795431600, deliverAt: 1795464000),
        ZoneWindow(zone: "Asia/Kolkata", previousStart: 1794162600, start: 1794767400, end: 1795372200, deliverAt: 1795404600),
        ZoneWindow(zone: "Asia/Kathmandu", previousStart: 1794161700, start: 1794766500, end: 1795371300, deliverAt: 1795403700),
        ZoneWindow(zone: "America/St_Johns", previousStart: 1794195000, start: 1794799800, end: 1795404600, deliverAt: 1795437000),
        ZoneWindow(zone: "Europe/Warsaw", previousStart: 1794178800, start: 1794783600, end: 1795388400, deliverAt: 1795420800),
    ]

    @Test(arguments: w47)
    func windowIn(zone expected: ZoneWindow) throws {
        let calendar = WeekCalendar(week: try ISOWeek(parsing: "2026-W47"))
        let (window, fellBack) = calendar.window(forZone: expected.zone)
        #expect(!fellBack)
        #expect(window.timeZone == expected.zone)
        #expect(window.dayStarts.count == 15)
        #expect(window.previousStart == expected.previousStart)
        #expect(window.start == expected.start)
        #expect(window.end == expected.end)
        #expect(window.deliverAt == expected.deliverAt)
        #expect(window.end - window.start == 7 * 86_400)
        #expect(window.dayIndex(of: window.start) == 7)
        #expect(window.dayIndex(of: window.end - 1) == 13)
        #expect(window.dayIndex(of: window.start - 1) == 6)
        #expect(window.dayIndex(of: window.end) == nil)
        #expect(window.dayIndex(of: window.previousStart - 1) == nil)
        #expect(window.dayIndex(of: window.previousStart) == 0)
    }

    @Test func stJohnsInSummerIsTwoAndAHalfHoursBehind() throws {
        // 2026-W27: Monday 2026-06-29 00:00 NDT (−2:30).
        let window = WeekCalendar(week: try ISOWeek(parsing: "2026-W27")).window(forZone: "America/St_Johns").window
        #expect(window.start == 1782700200)
        #expect(window.end == 1783305000)
        #expect(window.deliverAt == 1783337400)
    }

    @Test func springForwardWeekHas167Hours() throws {
        // Europe/Warsaw 2026-W13: Monday 2026-03-23 00:00 CET to Monday 2026-03-30 00:00 CEST.
        let window = WeekCalendar(week: try ISOWeek(parsing: "2026-W13")).window(forZone: "Europe/Warsaw").window
        #expect(window.start == 1774220400)
        #expect(window.end == 1774821600)
        #expect(window.end - window.start == 167 * 3600)
        #expect(window.dayStarts[13] == 1774738800)  // Sunday 29 March, 23 hours long
        #expect(window.end - window.dayStarts[13] == 23 * 3600)
        #expect(window.deliverAt == 1774854000)  // Monday 30 March 09:00 CEST
    }

    @Test func fallBackWeekHas169Hours() throws {
        // The October change is Sunday 2026-10-25, the last day of 2026-W43 (2026-W44 starts 26 October).
        let w43 = WeekCalendar(week: try ISOWeek(parsing: "2026-W43")).window(forZone: "Europe/Warsaw").window
        #expect(w43.start == 1792360800)
        #expect(w43.end == 1792969200)
        #expect(w43.end - w43.start == 169 * 3600)
        #expect(w43.deliverAt == 1793001600)  // Monday 26 October 09:00 CET
        let w44 = WeekCalendar(week: try ISOWeek(parsing: "2026-W44")).window(forZone: "Europe/Warsaw").window
        #expect(w44.start == 1792969200)
        #expect(w44.end == 1793574000)
        #expect(w44.end - w44.start == 168 * 3600)
    }

    @Test(arguments: ["Mars/Olympus", "", "Not a zone"])
    func unknownZoneFallsBackToUTC(zone: String) throws {
        let (window, fellBack) = WeekCalendar(week: try ISOWeek(parsing: "2026-W47")).window(forZone: zone)
        #expect(fellBack)
        #expect(window.timeZone == "UTC")
        #expect(window.start == 1794787200)
        #expect(window.end == 1795392000)
        #expect(window.deliverAt == 1795424400)
    }

    @Test func configurableDeliveryTime() throws {
        let calendar = WeekCalendar(
            week: try ISOWeek(parsing: "2026-W47"), delivery: .init(dayOffset: 1, hour: 18, minute: 30))
        #expect(calendar.window(forZone: "UTC").window.deliverAt == 1795545000)  // Tue 2026-11-24 18:30Z
        #expect(calendar.utcWindow.start == 1794787200)
    }

    @Test(arguments: [
        (1795435199, "2026-W46"),  // Monday 2026-11-23 11:59:59Z: W47 still runs in UTC−12
        (1795435200, "2026-W47"),  // 12:00:00Z: over everywhere
        (1795392000, "2026-W46"),  // 00:00Z
        (1796040000, "2026-W48"),  // Monday 2026-11-30 12:00Z
        (1799063999, "2026-W52"),  // Monday 2027-01-04 11:59:59Z
        (1799064000, "2026-W53"),  // 12:00Z
        (1767614400, "2026-W01"),  // Monday 2026-01-05 12:00Z
        (1609761600, "2020-W53"),  // Monday 2021-01-04 12:00Z
    ] as [(Int, String)])
    func latestCompleteWeek(now: Int, expected: String) throws {
        let date = Date(timeIntervalSince1970: TimeInterval(now))
        #expect(WeekCalendar.latestCompleteWeek(now: date).description == expected)
        let week = try ISOWeek(parsing: expected)
        #expect(WeekCalendar.isComplete(week, now: date))
        #expect(!WeekCalendar.isComplete(week.next, now: date))
    }
}
