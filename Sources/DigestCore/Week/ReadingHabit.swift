import Crypto
package import Foundation

/// `--deliver-at`: one local time for every reader, or each reader's habitual reading hour with a
/// time for those who have none (`habit`, `habit,09:00`, `habit,tue 09:00`).
package enum DeliverAt: Sendable, Hashable, CustomStringConvertible {
    case time(WeekCalendar.DeliveryTime)
    /// The reader's reading hour on the fallback's day; the fallback's time without a habit.
    case habit(fallback: WeekCalendar.DeliveryTime)

    /// Parses `09:00`, `tue 09:00`, `habit`, `habit,09:00` or `habit,tue 09:00`.
    package static func parse(_ text: String) throws(DeliveryOptionError) -> DeliverAt {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("habit") else { return .time(try .parse(trimmed)) }
        let rest = trimmed.dropFirst("habit".count)
        if rest.isEmpty { return .habit(fallback: .mondayMorning) }
        guard rest.first == "," else {
            throw DeliveryOptionError("delivery time '\(text)': habit takes its fallback after a comma, like habit,09:00")
        }
        return .habit(fallback: try .parse(String(rest.dropFirst())))
    }

    /// The day and the time a reader without a habit gets.
    package var fallback: WeekCalendar.DeliveryTime {
        switch self {
        case .time(let time): time
        case .habit(let fallback): fallback
        }
    }

    package var description: String {
        switch self {
        case .time(let time): time.description
        case .habit(let fallback): "habit,\(fallback.description)"
        }
    }
}

/// How a message's due time was chosen: the outbox's `timing` column.
package enum DeliveryTiming: String, Sendable, Hashable, CaseIterable {
    /// At the reader's habitual reading hour.
    case habit
    /// At the fallback time: too few reads to tell a habit.
    case fallback
    /// At the fallback time although the reader has a habit: the control group.
    case control
}

/// The hour of day a reader reads most, from the local times of their reads: the digest's week and
/// the three before it. A habit needs at least ``minimumReads`` reads on at least ``minimumDays``
/// different local days; the hour with the most reads wins, ties going to the earlier hour.
package enum ReadingHabit {
    package static let minimumReads = 5
    package static let minimumDays = 2
    /// The digest's week and the three before it.
    package static let weeks = 4

    /// What a reader's reads say: how many, on how many local days, and the hour read most.
    package struct Tally: Sendable, Hashable {
        package var reads = 0
        package var days = 0
        /// The hour of day (0…23) read most, ties to the earlier; `nil` below the thresholds.
        package var hour: Int?

        package init(reads: Int = 0, days: Int = 0, hour: Int? = nil) {
            self.reads = reads
            self.days = days
            self.hour = hour
        }
    }

    /// `localTimes` are local wall-clock seconds (``ZoneOffsets/local(_:)``); nil without a habit.
    package static func hour(localTimes: some Sequence<Int64>) -> Int? {
        tally(localTimes: localTimes).hour
    }

    /// Counts `localTimes` (local wall-clock seconds) by hour and by local day.
    package static func tally(localTimes: some Sequence<Int64>) -> Tally {
        var perHour = [Int](repeating: 0, count: 24)
        var tally = Tally()
        // Distinct local days: a few dozen at most in four weeks, found in a small array.
        var days: [Int64] = []
        for local in localTimes {
            let day = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
            perHour[Int((local - day * 86_400) / 3600)] += 1
            tally.reads += 1
            if days.last != day, !days.contains(day) { days.append(day) }
        }
        tally.days = days.count
        guard tally.reads >= minimumReads, tally.days >= minimumDays else { return tally }
        var best = 0
        for hour in 1..<24 where perHour[hour] > perHour[best] { best = hour }
        tally.hour = best
        return tally
    }

    /// When on the delivery day a habit hour is due, in minutes after local midnight: the hour itself,
    /// or, when it falls inside the quiet hours, the nearer of the day's two edges — the end of the
    /// quiet hours (the morning's, when they wrap midnight) or the last whole hour before they begin —
    /// distance measured within the day, ties to the earlier edge.
    package static func dueMinute(habitHour hour: Int, quiet: QuietHours?) -> Int {
        let minute = hour * 60
        guard let quiet, quiet.contains(minuteOfDay: minute) else { return minute }
        let after = quiet.end
        let before = (quiet.start - 1) / 60 * 60
        // Quiet hours from midnight have no whole hour before them that day.
        guard !quiet.contains(minuteOfDay: before) else { return after }
        let toAfter = abs(after - minute)
        let toBefore = abs(minute - before)
        if toAfter != toBefore { return toAfter < toBefore ? after : before }
        return min(after, before)
    }
}

/// A stable share of readers kept at the fallback time (`--holdout`): chosen by a hash of the word
/// `holdout`, the ISO week-year and the reader's id, so a reader is in the same group every week of a
/// year, on every store and worker, and independently of the variant split (which hashes other
/// input).
package struct ControlGroup: Sendable, Hashable {
    /// 0…100.
    package let percent: Int

    package init?(percent: Int) {
        guard (0...100).contains(percent) else { return nil }
        self.percent = percent
    }

    package func contains(userID: String, week: ISOWeek) -> Bool {
        guard percent > 0 else { return false }
        guard percent < 100 else { return true }
        return Self.bucket(userID: userID, weekYear: week.year) < percent
    }

    /// 0…99, uniform.
    static func bucket(userID: String, weekYear: Int) -> Int {
        let digest = SHA256.hash(data: Array("holdout:\(weekYear):\(userID)".utf8))
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value % 100)
    }
}

/// A zone's UTC offsets over a span of instants, computed once (a few DST changes at most), so each
/// read's local time is arithmetic rather than a time-zone lookup.
package struct ZoneOffsets: Sendable, Hashable {
    /// From each instant on (ascending), the offset in seconds; the first applies before it too.
    private let changes: [(from: Int64, offset: Int64)]

    package init(timeZone: TimeZone, from start: Int64, to end: Int64) {
        var changes = [(from: start, offset: Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(start)))))]
        var instant = Date(timeIntervalSince1970: Double(start))
        while let next = timeZone.nextDaylightSavingTimeTransition(after: instant), next.timeIntervalSince1970 < Double(end) {
            let at = Int64(next.timeIntervalSince1970.rounded(.down))
            changes.append((at, Int64(timeZone.secondsFromGMT(for: next))))
            instant = next
        }
        self.changes = changes
    }

    /// Local wall-clock seconds (since 1970-01-01 00:00 local) at an instant.
    package func local(_ instant: Int64) -> Int64 {
        var offset = changes[0].offset
        for change in changes.dropFirst() {
            guard instant >= change.from else { break }
            offset = change.offset
        }
        return instant + offset
    }

    package static func == (lhs: ZoneOffsets, rhs: ZoneOffsets) -> Bool {
        lhs.changes.elementsEqual(rhs.changes) { $0 == $1 }
    }

    package func hash(into hasher: inout Hasher) {
        for change in changes {
            hasher.combine(change.from)
            hasher.combine(change.offset)
        }
    }
}
