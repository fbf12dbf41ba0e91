public import Foundation
import Synchronization

/// The weeks a digest of a reader with a pace of N weeks (``ReaderPreferences/every``) covers, in
/// their zone: the last N weeks up to the run's week, and the N weeks before them that its "+x%"
/// compares with. For a weekly reader it is the ``WeekWindow`` itself (the composer makes no span).
package struct CoveredSpan: Sendable, Hashable {
    /// How many weeks the digest covers (2 or 4).
    package let weeks: Int
    /// `14 × weeks + 1` local midnights as Unix seconds: the first Monday of the weeks before
    /// through the Monday after the run's week. Day `i` is `[dayStarts[i], dayStarts[i + 1])`; days
    /// `7 × weeks` and later are the covered weeks.
    package let dayStarts: [Int64]

    package init(weeks: Int, dayStarts: [Int64]) {
        precondition(dayStarts.count == 14 * weeks + 1, "a span of \(weeks) weeks has \(14 * weeks) days")
        self.weeks = weeks
        self.dayStarts = dayStarts
    }

    /// The first local midnight of the covered weeks.
    package var start: Int64 { dayStarts[7 * weeks] }
    /// The first local midnight of the weeks compared with.
    package var previousStart: Int64 { dayStarts[0] }
    /// The Monday after the run's week, 00:00 local (exclusive).
    package var end: Int64 { dayStarts[dayStarts.count - 1] }
    /// The first day index of the covered weeks.
    package var firstCoveredDay: Int { 7 * weeks }
}

/// A cached span's key: the zone as asked for and the span's length.
struct SpanKey: Hashable {
    var zone: String
    var weeks: Int
}

extension WeekCalendar {
    /// The span a digest covering `weeks` weeks looks at in a zone (an unknown zone's is UTC's, as
    /// its window); cached per zone and length.
    package func span(forZone zone: String, weeks: Int) -> CoveredSpan {
        let key = SpanKey(zone: zone, weeks: weeks)
        if let hit = spans.withLock({ $0[key] }) { return hit }
        let window = window(forZone: zone).window
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: window.timeZone) ?? TimeZone(secondsFromGMT: 0)!
        let firstMonday = week.monday.adding(days: -7 * (2 * weeks - 1))
        let starts = (0...(14 * weeks)).map { offset in
            Self.localInstant(firstMonday.adding(days: offset), hour: 0, minute: 0, calendar: calendar)
        }
        let span = CoveredSpan(weeks: weeks, dayStarts: starts)
        spans.withLock { $0[key] = span }
        return span
    }

    /// The local date in a zone (an unknown zone: UTC, as its window) at an instant: the date a
    /// pause is checked against.
    package func localDate(of instant: Int64, zone: String) -> CivilDate {
        let window = window(forZone: zone).window
        let timeZone = TimeZone(identifier: window.timeZone) ?? TimeZone(secondsFromGMT: 0)!
        let local = instant + Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
        return CivilDate(daysSinceEpoch: Int(local >= 0 ? local / 86_400 : (local - 86_399) / 86_400))
    }
}
