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
    /// Local hours in which nothing becomes due (`nil`: none).
    public let quietHours: QuietHours?
    private let cache = Mutex<[String: (window: WeekWindow, fellBack: Bool)]>([:])
    private let slots = Mutex<[String: (now: Int64, ttl: Int64, slot: DeliverySlot)]>([:])
    /// Habit timing's caches: slots by zone and local minute, and each zone's offsets.
    private let habitSlots = Mutex<[HabitSlotKey: (now: Int64, ttl: Int64, slot: DeliverySlot)]>([:])
    private let offsets = Mutex<[String: ZoneOffsets]>([:])
    /// Multi-week spans (readers with a pace), by length and zone (``span(forZone:weeks:)``).
    let spans = Mutex<[SpanKey: CoveredSpan]>([:])

    private struct HabitSlotKey: Hashable {
        var zone: String
        var minuteOfDay: Int
    }

    public init(week: ISOWeek, delivery: DeliveryTime = .mondayMorning, quietHours: QuietHours? = .night) {
        self.week = week
        self.delivery = delivery
        self.quietHours = quietHours
    }

    /// When a message of this week for a reader in `zone` becomes due, enqueued at `now`: the delivery
    /// time, or when that has passed, `now`, or when `now` is inside the quiet hours, their end; with
    /// the window a sender may send it in (docs/001). Cached per zone.
    public func slot(forZone zone: String, now: Int64, ttl: Int64) -> DeliverySlot {
        if let hit = slots.withLock({ $0[zone] }), hit.now == now, hit.ttl == ttl { return hit.slot }
        let window = window(forZone: zone).window
        let timeZone = TimeZone(identifier: window.timeZone) ?? TimeZone(secondsFromGMT: 0)!
        let slot = Self.makeSlot(deliverAt: window.deliverAt, timeZone: timeZone, quiet: quietHours, now: now, ttl: ttl)
        slots.withLock { $0[zone] = (now, ttl, slot) }
        return slot
    }

    /// ``slot(forZone:now:ttl:)`` for a message due at another local time of the delivery day
    /// (`minuteOfDay` minutes after midnight): a reader's habit hour. Cached per zone and minute.
    package func slot(forZone zone: String, minuteOfDay: Int, now: Int64, ttl: Int64) -> DeliverySlot {
        let key = HabitSlotKey(zone: zone, minuteOfDay: minuteOfDay)
        if let hit = habitSlots.withLock({ $0[key] }), hit.now == now, hit.ttl == ttl { return hit.slot }
        let window = window(forZone: zone).window
        let timeZone = TimeZone(identifier: window.timeZone) ?? TimeZone(secondsFromGMT: 0)!
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let deliverAt = Self.localInstant(
            week.monday.adding(days: 7 + delivery.dayOffset), hour: minuteOfDay / 60, minute: minuteOfDay % 60, calendar: calendar)
        let slot = Self.makeSlot(deliverAt: deliverAt, timeZone: timeZone, quiet: quietHours, now: now, ttl: ttl)
        habitSlots.withLock { $0[key] = (now, ttl, slot) }
        return slot
    }

    /// A zone's UTC offsets from four weeks before the week's window to a day after it (the reads
    /// a habit counts), computed once per zone; an unknown zone's are UTC's.
    package func zoneOffsets(forZone zone: String) -> ZoneOffsets {
        if let hit = offsets.withLock({ $0[zone] }) { return hit }
        let window = window(forZone: zone).window
        let timeZone = TimeZone(identifier: window.timeZone) ?? TimeZone(secondsFromGMT: 0)!
        let value = ZoneOffsets(
            timeZone: timeZone, from: window.start - Int64(ReadingHabit.weeks) * 7 * 86_400, to: window.end + 86_400)
        offsets.withLock { $0[zone] = value }
        return value
    }

    static func makeSlot(deliverAt: Int64, timeZone: TimeZone, quiet: QuietHours?, now: Int64, ttl: Int64) -> DeliverySlot {
        var due = max(now, deliverAt)
        guard let quiet else { return DeliverySlot(availableAt: due, windowEnd: nil, quietUntil: nil, expiresAt: due + ttl) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        if quiet.contains(minuteOfDay: localMinute(of: due, in: timeZone)) {
            due = nextLocal(minuteOfDay: quiet.end, after: due, calendar: calendar)
        }
        let windowEnd = nextLocal(minuteOfDay: quiet.start, after: due, calendar: calendar)
        let quietUntil = nextLocal(minuteOfDay: quiet.end, after: windowEnd, calendar: calendar)
        return DeliverySlot(availableAt: due, windowEnd: windowEnd, quietUntil: quietUntil, expiresAt: due + ttl)
    }

    /// Minutes after local midnight at an instant.
    static func localMinute(of instant: Int64, in timeZone: TimeZone) -> Int {
        let local = instant + Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
        let seconds = ((local % 86_400) + 86_400) % 86_400
        return Int(seconds / 60)
    }

    /// The first instant after `instant` whose local time is `minuteOfDay` (a time skipped by a DST
    /// change counts as the moment after the gap).
    static func nextLocal(minuteOfDay: Int, after instant: Int64, calendar: Calendar) -> Int64 {
        let offset = Int64(calendar.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
        let local = instant + offset
        let today = CivilDate(daysSinceEpoch: Int(local >= 0 ? local / 86_400 : (local - 86_399) / 86_400))
        for days in 0...2 {
            let candidate = localInstant(
                today.adding(days: days), hour: minuteOfDay / 60, minute: minuteOfDay % 60, calendar: calendar)
            if candidate > instant { return candidate }
        }
        preconditionFailure("a local time comes round within two days")
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

    /// A zone's UTC offset in seconds when the week ends there (an unknown zone: 0, as UTC).
    public func utcOffset(forZone zone: String) -> Int {
        let window = window(forZone: zone).window
        let timeZone = TimeZone(identifier: window.timeZone) ?? TimeZone(secondsFromGMT: 0)!
        return timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(window.end)))
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
