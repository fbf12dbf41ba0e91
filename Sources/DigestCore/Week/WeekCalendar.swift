public import Foundation
import Synchronization

/// Answers "which instants make up this week for this user", caching one window per time zone.
///
/// The clock is injected: ``latestCompleteWeek(now:)`` takes the current instant.
public final class WeekCalendar: Sendable {
    /// When in the week after the digest's week a message becomes due, in the user's zone.
    public struct DeliveryTime: Sendable, Hashable {
        /// Days after the Monday that ends the week (0 = that Monday).
        public var dayOffset: Int
        public var hour: Int
        public var minute: Int

        public init(dayOffset: Int = 0, hour: Int = 9, minute: Int = 0) {
            self.dayOffset = dayOffset
            self.hour = hour
            self.minute = minute
        }

        /// Monday 09:00.
        public static let mondayMorning = DeliveryTime()
    }

    public let week: ISOWeek
    public let delivery: DeliveryTime
    private let cache = Mutex<[String: (window: WeekWindow, fellBack: Bool)]>([:])

    public init(week: ISOWeek, delivery: DeliveryTime = .mondayMorning) {
        self.week = week
        self.delivery = delivery
    }

    /// The week's window in a zone; an unknown zone gives UTC and `fellBack == true`.
    public func window(forZone zone: String) -> (window: WeekWindow, fellBack: Bool) {
        if let hit = cache.withLock({ $0[zone] }) { return hit }
        // The window is named by the zone asked for (Foundation on Linux calls UTC "GMT").
        let resolved: (TimeZone, String, Bool)
        if let tz = TimeZone(identifier: zone), !zone.isEmpty {
            resolved = (tz, zone, false)
        } else {
            resolved = (TimeZone(secondsFromGMT: 0)!, "UTC", true)
        }
        let window = Self.makeWindow(week: week, timeZone: resolved.0, name: resolved.1, delivery: delivery)
        let value = (window: window, fellBack: resolved.2)
        cache.withLock { $0[zone] = value }
        return value
    }

    /// The window in UTC: instants that bracket every zone's window lie within 14 hours of it.
    public var utcWindow: WeekWindow { window(forZone: "UTC").window }

    static func makeWindow(week: ISOWeek, timeZone: TimeZone, name: String, delivery: DeliveryTime) -> WeekWindow {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let firstMonday = week.monday.adding(days: -7)
        let starts = (0...14).map { offset in
            localInstant(firstMonday.adding(days: offset), hour: 0, minute: 0, calendar: calendar)
        }
        let deliverAt = localInstant(
            week.monday.adding(days: 7 + delivery.dayOffset), hour: delivery.hour, minute: delivery.minute,
            calendar: calendar)
        return WeekWindow(week: week, timeZone: name, dayStarts: starts, deliverAt: deliverAt)
    }

    /// Local wall time to an instant; a time inside a DST gap moves forward to the next valid one.
    static func localInstant(_ date: CivilDate, hour: Int, minute: Int, calendar: Calendar) -> Int64 {
        let components = DateComponents(
            year: date.year, month: date.month, day: date.day, hour: hour, minute: minute)
        guard let instant = calendar.date(from: components) else {
            preconditionFailure("the Gregorian calendar has every civil date")
        }
        return Int64(instant.timeIntervalSince1970.rounded(.down))
    }

    /// The latest week that has ended in every time zone (the last zone, UTC−12, ends it 12 hours after UTC).
    public static func latestCompleteWeek(now: Date) -> ISOWeek {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down)) - 12 * 3600
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        return ISOWeek(containing: CivilDate(daysSinceEpoch: days - 7))
    }

    /// Whether the week has ended in every zone at `now`.
    public static func isComplete(_ week: ISOWeek, now: Date) -> Bool {
        week <= latestCompleteWeek(now: now)
    }
}
