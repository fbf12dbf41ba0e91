/// One ISO week as instants in one time zone, with the previous week and the delivery time.
public struct WeekWindow: Sendable, Hashable {
    public let week: ISOWeek
    /// The IANA zone the instants are for (`UTC` when the user's zone was unknown).
    public let timeZone: String
    /// 15 local midnights as Unix seconds: the previous week's Monday through the following Monday.
    /// Day `i` is `[dayStarts[i], dayStarts[i + 1])`; days 7…13 are the week itself.
    public let dayStarts: [Int64]
    /// When the digest should be delivered (Unix seconds).
    public let deliverAt: Int64

    public init(week: ISOWeek, timeZone: String, dayStarts: [Int64], deliverAt: Int64) {
        precondition(dayStarts.count == 15, "a window has 14 days")
        self.week = week
        self.timeZone = timeZone
        self.dayStarts = dayStarts
        self.deliverAt = deliverAt
    }

    /// Monday 00:00 local.
    public var start: Int64 { dayStarts[7] }
    /// The following Monday 00:00 local (exclusive).
    public var end: Int64 { dayStarts[14] }
    /// The previous week's Monday 00:00 local.
    public var previousStart: Int64 { dayStarts[0] }

    /// The day (0…13) an instant falls on, or `nil` outside both weeks.
    public func dayIndex(of instant: Int64) -> Int? {
        guard instant >= dayStarts[0], instant < dayStarts[14] else { return nil }
        var low = 0
        var high = 14
        while high - low > 1 {
            let mid = (low + high) / 2
            if dayStarts[mid] <= instant { low = mid } else { high = mid }
        }
        return low
    }
}
