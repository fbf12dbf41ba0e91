public import DigestCore
import DigestStore
import Foundation
import Synchronization

/// The week arithmetic of rolling runs (``WeeklyRun/runRolling(now:grace:progress:)``).
public enum RollingRun {
    /// Weeks before the latest a rolling run still walks when earlier runs left them under way (a
    /// scheduler that was off catches up, oldest first).
    public static let catchUpWeeks = 2

    /// The latest ISO week that has ended somewhere at `instant`: the first zone to end a week is
    /// UTC+14, at Sunday 10:00 UTC.
    public static func latestEndedWeek(at instant: Int64) -> ISOWeek {
        let shifted = instant + 14 * 3600
        let day = Int(shifted >= 0 ? shifted / 86_400 : (shifted - 86_399) / 86_400)
        return ISOWeek(containing: CivilDate(daysSinceEpoch: day)).previous
    }

    /// The weeks a rolling run walks, oldest first: from the week runs resume from (the oldest still
    /// under way, else the latest started; at most ``catchUpWeeks`` back) to `latest`; only `latest`
    /// before any run.
    public static func weeks(latest: ISOWeek, lastRun: ISOWeek?) -> [ISOWeek] {
        var first = latest
        if let lastRun, lastRun < latest {
            first = lastRun
            var floor = latest
            for _ in 0..<catchUpWeeks { floor = floor.previous }
            if first < floor { first = floor }
        }
        var weeks = [first]
        while let last = weeks.last, last < latest { weeks.append(last.next) }
        return weeks
    }

    /// The UTC offsets (`+05:45`) the zones had when the week ended there, east first.
    public static func offsets(of zones: [String], calendar: WeekCalendar) -> [String] {
        let seconds = Set(zones.map { calendar.utcOffset(forZone: $0) })
        return seconds.sorted(by: >).map(ZoneProgress.format(offset:))
    }
}

/// The zones a rolling run walks for one week and how far it got in each: reads are one at a time
/// (the run's state machine), so each read starts from where the last one left every zone.
final class ZoneWalk: Sendable {
    private struct State {
        var remaining: [ZoneCursor]
        var touched: [String] = []
    }

    private let state: Mutex<State>
    /// Every zone of the store has ended the week (the week is done once the walk is).
    let allZonesEnded: Bool
    /// Some zone had been walked before this run.
    let started: Bool
    /// The week walked.
    let week: ISOWeek

    init(week: ISOWeek, _ cursors: [ZoneCursor], allZonesEnded: Bool) {
        self.week = week
        state = Mutex(State(remaining: cursors))
        self.allZonesEnded = allZonesEnded
        started = cursors.contains { $0.seq > 0 }
    }

    /// Zones with users left, at their cursors.
    var remaining: [ZoneCursor] { state.withLock { $0.remaining } }
    /// Zones this run took users from.
    var touched: [String] { state.withLock { $0.touched } }

    /// The next batch across the zones, or `nil` when every zone is done.
    func load(from history: some HistoryReader, limit: Int, composer: BatchComposer) async throws -> ReadBatch? {
        let zones = remaining
        guard !zones.isEmpty else { return nil }
        let batch = try await history.nextBatch(week: week, zones: zones, limit: limit)
        state.withLock { state in
            let exhausted = Set(batch.exhausted)
            var moved: [String: Int64] = [:]
            for cursor in batch.cursors {
                moved[cursor.zone] = cursor.seq
                if !state.touched.contains(cursor.zone) { state.touched.append(cursor.zone) }
            }
            state.remaining = state.remaining.compactMap { zone in
                if exhausted.contains(zone.zone) { return nil }
                guard let seq = moved[zone.zone] else { return zone }
                return ZoneCursor(zone: zone.zone, seq: seq)
            }
        }
        guard !batch.users.isEmpty else { return nil }
        let histories = try await history.histories(of: batch.users, for: composer)
        return ReadBatch(users: batch.users, histories: histories, lastKey: 0, zoneCursors: batch.cursors)
    }
}
