import DigestCore

/// How far a rolling run went through the users of one time zone for a week: users whose sequence
/// number (`seq`: it grows when a user is added, moves zone or gains a device) is at most `seq` are
/// done.
public struct ZoneCursor: Sendable, Hashable {
    public var zone: String
    public var seq: Int64
    /// In a batch's cursors: how many of the zone's users the batch holds.
    public var taken: Int

    public init(zone: String, seq: Int64, taken: Int = 0) {
        self.zone = zone
        self.seq = seq
        self.taken = taken
    }
}

/// The users a rolling run works on next, from the zones it walks, with where that leaves each zone.
public struct ZoneBatch: Sendable {
    /// In key order (whatever their zones).
    public var users: [StoredReader]
    /// The new cursor of each zone the batch took users from.
    public var cursors: [ZoneCursor]
    /// Zones with no user left after their cursor.
    public var exhausted: [String]

    public init(users: [StoredReader], cursors: [ZoneCursor], exhausted: [String]) {
        self.users = users
        self.cursors = cursors
        self.exhausted = exhausted
    }
}

/// One time zone's part of a week in `digest run --status`: users digested and still waiting.
public struct ZoneProgress: Sendable, Codable, Hashable {
    public var week: String
    public var zone: String
    /// The zone's UTC offset when the week ends there, in seconds.
    public var offset: Int
    /// Users the week's runs went through in the zone (digested or skipped with a reason).
    public var done: Int
    /// Users of the zone after its cursor (all of them before the zone's week has ended).
    public var waiting: Int

    public init(week: String, zone: String, offset: Int, done: Int, waiting: Int) {
        self.week = week
        self.zone = zone
        self.offset = offset
        self.done = done
        self.waiting = waiting
    }
}

extension ZoneProgress {
    /// `+05:45`, `-03:30`, `+00:00`.
    public static func format(offset seconds: Int) -> String {
        let sign = seconds < 0 ? "-" : "+"
        let minutes = abs(seconds) / 60
        let hours = minutes / 60
        let rest = minutes % 60
        return sign + (hours < 10 ? "0\(hours)" : "\(hours)") + ":" + (rest < 10 ? "0\(rest)" : "\(rest)")
    }

    /// One line per UTC offset, east first: `UTC+05:45: 120 done, 3 waiting (1 zone)` (done: digested
    /// or skipped with a reason).
    public static func lines(_ zones: [ZoneProgress]) -> [String] {
        let byOffset = Dictionary(grouping: zones, by: \.offset)
        return byOffset.keys.sorted(by: >).map { offset in
            let group = byOffset[offset]!
            let done = group.reduce(0) { $0 + $1.done }
            let waiting = group.reduce(0) { $0 + $1.waiting }
            return "UTC\(format(offset: offset)): \(done) done, \(waiting) waiting (\(group.count) zone\(group.count == 1 ? "" : "s"))"
        }
    }
}
