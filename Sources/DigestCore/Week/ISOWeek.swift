/// An ISO-8601 week such as `2026-W47`: Monday to Sunday, week 1 holding the year's first Thursday.
public struct ISOWeek: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let week: Int

    /// A week of a year; `nil` when the year has no such week (W53 exists only in long years).
    public init?(year: Int, week: Int) {
        guard (1...9999).contains(year), week >= 1, week <= ISOWeek.weeksInYear(year) else { return nil }
        self.year = year
        self.week = week
    }

    /// Parses `2026-W47` (also `2026W47`, `2026-w47`).
    public init(parsing text: String) throws(WeekError) {
        let upper = text.uppercased()
        let parts = upper.split(separator: "W", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw WeekError.malformed(text) }
        var yearPart = parts[0]
        if yearPart.hasSuffix("-") { yearPart = yearPart.dropLast() }
        guard yearPart.count == 4, parts[1].count == 2,
            yearPart.allSatisfy({ $0.isASCII && $0.isNumber }), parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
            let year = Int(yearPart), let week = Int(parts[1])
        else { throw WeekError.malformed(text) }
        guard let value = ISOWeek(year: year, week: week) else {
            throw WeekError.noSuchWeek(text, weeksInYear: ISOWeek.weeksInYear(year))
        }
        self = value
    }

    /// The week holding a date.
    public init(containing date: CivilDate) {
        // The week belongs to the year of its Thursday.
        let days = date.daysSinceEpoch
        let thursday = days - (date.isoWeekday - 1) + 3
        let year = CivilDate(daysSinceEpoch: thursday).year
        let firstDay = CivilDate(year: year, month: 1, day: 1).daysSinceEpoch
        self.year = year
        self.week = (thursday - firstDay) / 7 + 1
    }

    /// 52 or 53.
    public static func weeksInYear(_ year: Int) -> Int {
        let jan1 = CivilDate(year: year, month: 1, day: 1).isoWeekday
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        return jan1 == 4 || (leap && jan1 == 3) ? 53 : 52
    }

    /// The Monday that starts the week.
    public var monday: CivilDate {
        let jan4 = CivilDate(year: year, month: 1, day: 4)
        return jan4.adding(days: -(jan4.isoWeekday - 1) + 7 * (week - 1))
    }

    public var previous: ISOWeek { ISOWeek(containing: monday.adding(days: -7)) }
    public var next: ISOWeek { ISOWeek(containing: monday.adding(days: 7)) }

    public static func < (lhs: ISOWeek, rhs: ISOWeek) -> Bool { (lhs.year, lhs.week) < (rhs.year, rhs.week) }

    public var description: String {
        // Written digit by digit (a run writes it several times a reader); interpolated past 4-digit years.
        guard (1000...9999).contains(year), (0...99).contains(week) else {
            return week < 10 ? "\(year)-W0\(week)" : "\(year)-W\(week)"
        }
        return String(unsafeUninitializedCapacity: 8) { out in
            func digit(_ value: Int) -> UInt8 { UInt8(truncatingIfNeeded: 0x30 + value % 10) }
            out[0] = digit(year / 1000)
            out[1] = digit(year / 100)
            out[2] = digit(year / 10)
            out[3] = digit(year)
            out[4] = UInt8(ascii: "-")
            out[5] = UInt8(ascii: "W")
            out[6] = digit(week / 10)
            out[7] = digit(week)
            return 8
        }
    }
}

/// Why a week could not be used.
public struct WeekError: Error, CustomStringConvertible, Equatable {
    public let description: String

    static func malformed(_ text: String) -> WeekError {
        WeekError(description: "week '\(text)' is not an ISO week like 2026-W47")
    }

    static func noSuchWeek(_ text: String, weeksInYear: Int) -> WeekError {
        WeekError(description: "week '\(text)' does not exist: that year has \(weeksInYear) ISO weeks")
    }
}
