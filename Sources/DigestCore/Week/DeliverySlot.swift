import Foundation

/// Local hours in which no digest may become due or be sent, e.g. `21:00-08:00` (wrapping midnight).
public struct QuietHours: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after local midnight: quiet from `start` (inclusive) to `end` (exclusive).
    public let start: Int
    public let end: Int

    /// `nil` when `start == end` (no quiet hours) or a value is outside a day.
    public init?(start: Int, end: Int) {
        guard (0..<1440).contains(start), (0..<1440).contains(end), start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// 21:00 to 08:00.
    public static let night = QuietHours(start: 21 * 60, end: 8 * 60)!

    /// Parses `21:00-08:00`; `off` (or `none`) gives `nil` inside `.some`.
    public static func parse(_ text: String) throws(DeliveryOptionError) -> QuietHours? {
        let lowered = text.lowercased()
        if lowered == "off" || lowered == "none" { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = clockMinutes(parts[0]), let end = clockMinutes(parts[1]) else {
            throw DeliveryOptionError("quiet hours '\(text)' are not like 21:00-08:00 (or off)")
        }
        guard let hours = QuietHours(start: start, end: end) else {
            throw DeliveryOptionError("quiet hours '\(text)' start and end at the same time: say off for none")
        }
        return hours
    }

    /// Whether a local minute of the day is quiet.
    public func contains(minuteOfDay minute: Int) -> Bool {
        start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
    }

    /// Minutes of quiet a day.
    public var length: Int { start < end ? end - start : 1440 - start + end }

    public var description: String { "\(clock(start))-\(clock(end))" }
}

/// When a message may be sent, as UTC instants, so that a sender needs no time zone tables: from
/// `availableAt` until `windowEnd` (the reader's quiet hours start), then again from `quietUntil`
/// (and the same hours on each following day); never at or after `expiresAt`.
public struct DeliverySlot: Sendable, Hashable {
    /// Due: not to be sent before (Unix seconds).
    public var availableAt: Int64
    /// The start of the first quiet hours after `availableAt`; `nil`: no quiet hours.
    public var windowEnd: Int64?
    /// The end of those quiet hours; `nil` with `windowEnd`.
    public var quietUntil: Int64?
    /// The due time plus the message's TTL: after it the message is expired, never sent.
    public var expiresAt: Int64

    public init(availableAt: Int64, windowEnd: Int64?, quietUntil: Int64?, expiresAt: Int64) {
        self.availableAt = availableAt
        self.windowEnd = windowEnd
        self.quietUntil = quietUntil
        self.expiresAt = expiresAt
    }

    /// Where a message whose window ended stands at `now` (`now >= windowEnd`): its window moves on by
    /// whole days until it ends after `now`, and it is due at the end of the quiet hours before that
    /// window (already past when `now` is inside the new window). The same arithmetic as the
    /// consumers' SQL (docs/001).
    public func held(at now: Int64) -> DeliverySlot {
        guard let windowEnd, let quietUntil, now >= windowEnd else { return self }
        let days = (now - windowEnd) / 86_400 + 1
        return DeliverySlot(
            availableAt: quietUntil + (days - 1) * 86_400, windowEnd: windowEnd + days * 86_400,
            quietUntil: quietUntil + days * 86_400, expiresAt: expiresAt)
    }
}

/// A `--deliver-at` or `--quiet-hours` value that cannot be used.
public struct DeliveryOptionError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension WeekCalendar.DeliveryTime {
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Parses `09:00` (Monday) or `tue 10:30` / `tue-10:30`: the day of the week after the digest's
    /// week, and the local time.
    public static func parse(_ text: String) throws(DeliveryOptionError) -> WeekCalendar.DeliveryTime {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        var day = 0
        var time = Substring(trimmed)
        if let first = trimmed.first, first.isLetter {
            let name = trimmed.prefix(3)
            guard let index = days.firstIndex(of: String(name)) else {
                throw DeliveryOptionError("delivery time '\(text)': the day is one of mon, tue, wed, thu, fri, sat, sun")
            }
            day = index
            time = trimmed.dropFirst(3).drop { $0 == " " || $0 == "-" }
        }
        guard let minutes = clockMinutes(time) else {
            throw DeliveryOptionError("delivery time '\(text)' is not like 09:00 or tue 09:00")
        }
        return WeekCalendar.DeliveryTime(dayOffset: day, hour: minutes / 60, minute: minutes % 60)
    }

    public var description: String {
        "\(Self.days[dayOffset % 7]) \(clock(hour * 60 + minute))"
    }
}

/// `HH:MM` (24-hour) to minutes after midnight.
func clockMinutes(_ text: Substring) -> Int? {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, parts[0].count == 2 || parts[0].count == 1, parts[1].count == 2,
        parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
        let hour = Int(parts[0]), let minute = Int(parts[1]), hour < 24, minute < 60
    else { return nil }
    return hour * 60 + minute
}

func clock(_ minutes: Int) -> String {
    let hour = minutes / 60
    let minute = minutes % 60
    return (hour < 10 ? "0\(hour)" : "\(hour)") + ":" + (minute < 10 ? "0\(minute)" : "\(minute)")
}
