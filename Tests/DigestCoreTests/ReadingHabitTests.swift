@testable import DigestCore
import Foundation
import Testing

/// The reading-hour rule of `--deliver-at habit`: thresholds, ties, the quiet hours' edges, local
/// hours across DST changes, and the control group's stable share.
@Suite struct ReadingHabitTests {
    /// Local wall-clock seconds of a day (days after 2026-11-02, a Monday) and a time.
    static func local(day: Int, _ hour: Int, _ minute: Int = 0) -> Int64 {
        Int64(CivilDate(year: 2026, month: 11, day: 2).daysSinceEpoch + day) * 86_400 + Int64(hour * 3600 + minute * 60)
    }

    @Test func deliverAtParsesATimeOrAHabitWithItsFallback() throws {
        #expect(try DeliverAt.parse("09:00") == .time(.mondayMorning))
        #expect(try DeliverAt.parse("habit") == .habit(fallback: .mondayMorning))
        #expect(try DeliverAt.parse("habit,10:30") == .habit(fallback: .init(dayOffset: 0, hour: 10, minute: 30)))
        #expect(try DeliverAt.parse("habit,tue 09:00") == .habit(fallback: .init(dayOffset: 1, hour: 9, minute: 0)))
        #expect(try DeliverAt.parse("habit,tue 09:00").description == "habit,tue 09:00")
        #expect(throws: DeliveryOptionError.self) { try DeliverAt.parse("habit 09:00") }
        #expect(throws: DeliveryOptionError.self) { try DeliverAt.parse("habit,25:00") }
        #expect(throws: DeliveryOptionError.self) { try DeliverAt.parse("habitual") }
    }

    @Test func aHabitNeedsFiveReadsOnTwoDays() {
        let four = [Self.local(day: 0, 7, 5), Self.local(day: 1, 7, 10), Self.local(day: 2, 7), Self.local(day: 3, 7)]
        #expect(ReadingHabit.hour(localTimes: four) == nil)
        let oneDay = (0..<8).map { Self.local(day: 4, 7, $0 * 5) }
        #expect(ReadingHabit.hour(localTimes: oneDay) == nil)
        #expect(ReadingHabit.hour(localTimes: four + [Self.local(day: 5, 22, 59)]) == 7)
        #expect(ReadingHabit.hour(localTimes: [Self.local(day: 0, 23, 59)] + oneDay) == 7)
    }

    @Test func theHourReadMostWinsAndTiesGoToTheEarlierHour() {
        let reads = [
            Self.local(day: 0, 21, 5), Self.local(day: 1, 21, 40), Self.local(day: 2, 6, 59),
            Self.local(day: 3, 6, 0), Self.local(day: 9, 13, 0), Self.local(day: 20, 13, 30),
        ]
        // 06 and 21 and 13 twice each: 06.
        #expect(ReadingHabit.hour(localTimes: reads) == 6)
        #expect(ReadingHabit.hour(localTimes: reads + [Self.local(day: 27, 21, 1)]) == 21)
        // Midnight's hour is hour 0, and reads before 1970 (local) count on their own day.
        #expect(ReadingHabit.hour(localTimes: (0..<5).map { Self.local(day: $0, 0, 30) }) == 0)
        #expect(ReadingHabit.hour(localTimes: [-3600, -3600 - 86_400, -60, -120, -86_400 - 30]) == 23)
    }

    @Test(arguments: [
        // Default quiet hours 21:00-08:00: a late habit moves to 20:00, an early one to 08:00.
        (21 * 60, 8 * 60, 23, 20 * 60), (21 * 60, 8 * 60, 21, 20 * 60), (21 * 60, 8 * 60, 2, 8 * 60),
        (21 * 60, 8 * 60, 7, 8 * 60), (21 * 60, 8 * 60, 14, 14 * 60), (21 * 60, 8 * 60, 20, 20 * 60),
        (21 * 60, 8 * 60, 8, 8 * 60),
        // Minutes off the hour: ends at 07:45; the last whole hour before 21:30 is 21:00.
        (21 * 60 + 30, 7 * 60 + 45, 22, 21 * 60), (21 * 60 + 30, 7 * 60 + 45, 5, 7 * 60 + 45),
        (21 * 60 + 30, 7 * 60 + 45, 21, 21 * 60),
        // Quiet hours inside one day: the nearer edge, a tie to the earlier one.
        (12 * 60, 15 * 60, 13, 11 * 60), (12 * 60, 15 * 60, 14, 15 * 60), (12 * 60, 15 * 60, 12, 11 * 60),
        // From midnight: no hour before them that day.
        (0, 7 * 60, 0, 7 * 60), (0, 7 * 60, 6, 7 * 60),
    ])
    func aHabitInsideTheQuietHoursMovesToTheNearerEdge(start: Int, end: Int, habit: Int, due: Int) throws {
        let quiet = try #require(QuietHours(start: start, end: end))
        #expect(ReadingHabit.dueMinute(habitHour: habit, quiet: quiet) == due, "\(quiet) habit \(habit)")
        #expect(ReadingHabit.dueMinute(habitHour: habit, quiet: nil) == habit * 60)
    }

    /// Foundation's offset at every instant of four weeks around each zone's DST change (or none)
    /// is what the precomputed table gives.
    @Test(arguments: ["Europe/Warsaw", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham", "UTC"])
    func localTimesMatchFoundationAcrossDSTChanges(zone: String) throws {
        let timeZone = try #require(TimeZone(identifier: zone))
        // 2026-03-09 … 2026-04-06 holds Europe's and Australia's changes; 2026-10-19 … 2026-11-16
        // Europe's and America's autumn ones.
        for start: Int64 in [1_773_014_400, 1_792_368_000] {
            let end = start + 28 * 86_400
            let offsets = ZoneOffsets(timeZone: timeZone, from: start, to: end)
            for instant in stride(from: start, to: end, by: 1_777) {
                let expected = instant + Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
                #expect(offsets.local(instant) == expected, "\(zone) at \(instant)")
            }
        }
    }

    /// Reads at 07:xx local in Warsaw on both sides of the spring change (06:xx UTC, then 05:xx) make
    /// an 07:00 habit.
    @Test func aHabitIsTheLocalHourOnBothSidesOfADSTChange() throws {
        let timeZone = try #require(TimeZone(identifier: "Europe/Warsaw"))
        let start: Int64 = 1_773_014_400  // 2026-03-09T00:00Z
        let offsets = ZoneOffsets(timeZone: timeZone, from: start, to: start + 28 * 86_400)
        let before = [1_774_333_800, 1_774_420_200, 1_774_506_600].map(Int64.init)  // 2026-03-24…26 06:30Z = 07:30 CET
        let after = [1_774_848_600, 1_774_935_000, 1_775_021_400].map(Int64.init)  // 2026-03-30…04-01 05:30Z = 07:30 CEST
        #expect(ReadingHabit.hour(localTimes: (before + after).map(offsets.local)) == 7)
        // Reading the same UTC hour throughout is not one local hour.
        let sameUTC = before + after.map { $0 + 3600 }
        #expect(ReadingHabit.hour(localTimes: sameUTC.map(offsets.local)) == 7)
        #expect(sameUTC.map(offsets.local).map { ($0 % 86_400) / 3600 } == [7, 7, 7, 8, 8, 8])
    }

    @Test func theControlGroupIsAStableShareIndependentOfTheVariantSplit() throws {
        let group = try #require(ControlGroup(percent: 10))
        let week = try ISOWeek(parsing: "2026-W47")
        let next = try ISOWeek(parsing: "2026-W48")
        var control = 0
        var controlInImageArm = 0
        var moved = 0
        for i in 0..<100_000 {
            let user = "reader-\(i)"
            let inControl = group.contains(userID: user, week: week)
            if inControl != group.contains(userID: user, week: next) { moved += 1 }
            guard inControl else { continue }
            control += 1
            if VariantPlanner.bucket("\(week):\(user)") < 50 { controlInImageArm += 1 }
        }
        #expect((9_000...11_000).contains(control), "\(control) of 100,000 in the control group")
        #expect(moved == 0)
        // The split's image arm holds half of the control group, as of everyone.
        #expect(abs(Double(controlInImageArm) / Double(control) - 0.5) < 0.03, "\(controlInImageArm) of \(control)")
        #expect(ControlGroup(percent: 0)?.contains(userID: "reader-1", week: week) == false)
        #expect(ControlGroup(percent: 100)?.contains(userID: "reader-1", week: week) == true)
        #expect(ControlGroup(percent: 101) == nil)
    }

    @Test func theTallyCountsEveryReadAndLocalDay() {
        let reads = [Self.local(day: 0, 19, 5), Self.local(day: 0, 19, 50), Self.local(day: 3, 19), Self.local(day: 9, 8), Self.local(day: 9, 19, 1)]
        #expect(ReadingHabit.tally(localTimes: reads) == ReadingHabit.Tally(reads: 5, days: 3, hour: 19))
        #expect(ReadingHabit.tally(localTimes: reads.prefix(4)) == ReadingHabit.Tally(reads: 4, days: 3, hour: nil))
        #expect(ReadingHabit.tally(localTimes: [Int64]()) == ReadingHabit.Tally())
    }

    @Test func theReasonSaysWhy() {
        let habit = DeliveryChoice(timing: .habit, minuteOfDay: 19 * 60, tally: .init(reads: 14, days: 6, hour: 19))
        #expect(habit.reason == "habit: 19:00 local from 14 reads on 6 days" && habit.dueLocal == "19:00")
        let moved = DeliveryChoice(timing: .habit, minuteOfDay: 20 * 60, tally: .init(reads: 5, days: 2, hour: 23))
        #expect(moved.reason == "habit: 23:00 local from 5 reads on 2 days, due at 20:00 outside the quiet hours")
        #expect(DeliveryChoice(timing: .fallback, minuteOfDay: 540, tally: .init(reads: 3, days: 2)).reason == "fallback: 3 reads")
        #expect(DeliveryChoice(timing: .fallback, minuteOfDay: 540, tally: .init(reads: 1, days: 1)).reason == "fallback: 1 read")
        #expect(DeliveryChoice(timing: .fallback, minuteOfDay: 540, tally: .init(reads: 7, days: 1)).reason == "fallback: 7 reads on 1 day")
        #expect(DeliveryChoice(timing: .control, minuteOfDay: 540, tally: .init(reads: 9, days: 4, hour: 7)).reason == "control group")
        #expect(DeliveryChoice(timing: nil, minuteOfDay: 9 * 60 + 30).reason == nil)
        #expect(DeliveryChoice(timing: nil, minuteOfDay: 9 * 60 + 30).dueLocal == "09:30")
    }

    /// A habit's slot on the delivery day in a zone, across the spring change (the delivery Monday
    /// after Europe's clocks went forward): the local hour, outside the quiet hours; a run after it
    /// makes it due at once, as for everyone.
    @Test func aHabitSlotIsTheLocalMinuteOfTheDeliveryDay() throws {
        let calendar = WeekCalendar(week: try ISOWeek(parsing: "2026-W13"))
        let early: Int64 = 1_774_800_000  // 2026-03-29T16:00:00Z
        let slot = calendar.slot(forZone: "Europe/Warsaw", minuteOfDay: 19 * 60, now: early, ttl: 100)
        #expect(slot.availableAt == 1_774_890_000)  // Monday 30 March 19:00 CEST = 17:00Z
        #expect(slot.windowEnd == 1_774_897_200 && slot.quietUntil == 1_774_936_800)  // 21:00 CEST, Tuesday 08:00 CEST
        #expect(calendar.slot(forZone: "Europe/Warsaw", minuteOfDay: 10 * 60, now: early, ttl: 100).availableAt == 1_774_857_600)
        let late: Int64 = 1_774_893_600  // 20:00 CEST
        #expect(calendar.slot(forZone: "Europe/Warsaw", minuteOfDay: 19 * 60, now: late, ttl: 100).availableAt == late)
        // The fallback's slot is the delivery time's, unchanged.
        #expect(calendar.slot(forZone: "Europe/Warsaw", now: early, ttl: 100).availableAt == 1_774_854_000)
    }
}
