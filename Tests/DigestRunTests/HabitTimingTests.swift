import DigestCore
import DigestImport
import DigestRun
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `--deliver-at habit` through the composer on a fixed instant (zones, DST, quiet hours, late
/// readers, `--send-at now`, the control group), and a run on both stores writing `timing` and
/// `due_local` once.
@Suite struct HabitTimingTests {
    /// 2026-W13 (23–29 March 2026): Europe's clocks go forward on its Sunday, America's went forward
    /// on 8 March, inside the three weeks before. Delivery day: Monday 30 March.
    static let week = try! ISOWeek(parsing: "2026-W13")
    /// Monday 30 March 2026 05:00Z: the week has ended in Warsaw, New York and Kathmandu.
    static let now: Int64 = 1_774_846_800

    static func composer(
        habit: HabitDelivery? = HabitDelivery(), quiet: QuietHours? = .night, sendAt: BatchComposer.SendAt = .local, now: Int64 = now
    ) throws -> BatchComposer {
        var configuration = BatchComposer.Configuration(week: week)
        configuration.habit = habit
        configuration.quietHours = quiet
        configuration.sendAt = sendAt
        return BatchComposer(
            configuration: configuration, articles: [], templates: try TemplateCatalog(directory: DigestBinary.templates),
            attachments: NoAttachments(), now: now)
    }

    static func reader(_ id: String, zone: String) -> Reader {
        Reader(id: id, locale: "en", timeZone: zone, optedOut: false, devices: [Device(token: "tok-\(id)", platform: .android)])
    }

    /// Reads at a local time on days after the week's Monday (negative: the weeks before), in `zone`.
    static func reads(zone: String, days: [Int], _ hour: Int, _ minute: Int = 0) -> [ReadEvent] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        return days.enumerated().map { index, day in
            let date = calendar.date(from: DateComponents(year: 2026, month: 3, day: 23 + day, hour: hour, minute: minute))!
            return ReadEvent(articleID: "a\(index)", topics: ["swift"], readAt: Int64(date.timeIntervalSince1970), seconds: 120)
        }
    }

    static func compose(_ composer: BatchComposer, _ reader: Reader, _ reads: [ReadEvent]) async -> ComposedUser {
        await composer.composeUser(reader, history: ReaderHistory(reads: reads.sorted { $0.readAt < $1.readAt }))
    }

    /// Reads at 19:xx in Warsaw on both sides of the spring change (18:xx UTC before, 17:xx after)
    /// make a 19:00 habit, due Monday 19:00 CEST (17:00Z).
    @Test func aHabitIsDueAtTheReadersLocalHourAcrossADSTChange() async throws {
        let reads = Self.reads(zone: "Europe/Warsaw", days: [-20, -13, -6, 2, 5, 6], 19, 12)
        let user = await Self.compose(try Self.composer(), Self.reader("w", zone: "Europe/Warsaw"), reads)
        #expect(user.delivery?.timing == .habit)
        #expect(user.delivery?.reason == "habit: 19:00 local from 6 reads on 6 days")
        let message = try #require(user.messages.first)
        #expect(message.timing == .habit && message.dueLocal == "19:00")
        #expect(message.availableAt == 1_774_890_000)  // 2026-03-30T17:00:00Z
        // The window ends when the quiet hours begin that evening (21:00 CEST).
        #expect(message.windowEnd == 1_774_897_200)
        #expect(message.report.contains(#""due_reason":"habit: 19:00 local from 6 reads on 6 days""#))
    }

    /// 07:30 in New York, before and after 8 March (12:30Z, then 11:30Z): an 07:00 habit, inside the
    /// quiet hours, due at their end, 08:00 EDT (12:00Z).
    @Test func aHabitInsideTheQuietHoursIsDueAtTheirNearerEdge() async throws {
        let reads = Self.reads(zone: "America/New_York", days: [-18, -17, -16, -10, 1, 3], 7, 30)
        let user = await Self.compose(try Self.composer(), Self.reader("n", zone: "America/New_York"), reads)
        let message = try #require(user.messages.first)
        #expect(message.timing == .habit && message.dueLocal == "08:00")
        #expect(message.availableAt == 1_774_872_000)  // 2026-03-30T12:00:00Z
        #expect(user.delivery?.reason == "habit: 07:00 local from 6 reads on 6 days, due at 08:00 outside the quiet hours")
        // Without quiet hours, the hour itself.
        let unquiet = await Self.compose(try Self.composer(quiet: nil), Self.reader("n", zone: "America/New_York"), reads)
        #expect(unquiet.messages.first?.dueLocal == "07:00" && unquiet.messages.first?.availableAt == 1_774_872_000 - 3600)
    }

    /// Kathmandu (UTC+5:45): reads at 13:50 local (08:05Z) are hour 13, due 13:00 NPT (07:15Z).
    @Test func aQuarterHourZoneCountsItsOwnHours() async throws {
        let reads = Self.reads(zone: "Asia/Kathmandu", days: [-3, -2, -1, 0, 1], 13, 50)
        let user = await Self.compose(try Self.composer(), Self.reader("k", zone: "Asia/Kathmandu"), reads)
        #expect(user.messages.first?.dueLocal == "13:00")
        #expect(user.messages.first?.availableAt == 1_774_854_900)  // 2026-03-30T07:15:00Z
    }

    @Test func tooFewReadsOrDaysFallBack() async throws {
        let composer = try Self.composer()
        let few = await Self.compose(composer, Self.reader("f", zone: "Europe/Warsaw"), Self.reads(zone: "Europe/Warsaw", days: [1, 2, 3, 4], 19))
        #expect(few.delivery?.timing == .fallback && few.delivery?.reason == "fallback: 4 reads")
        #expect(few.messages.first?.dueLocal == "09:00" && few.messages.first?.availableAt == 1_774_854_000)  // 09:00 CEST
        let oneDay = await Self.compose(
            composer, Self.reader("f", zone: "Europe/Warsaw"), (0..<6).flatMap { Self.reads(zone: "Europe/Warsaw", days: [4], 10, $0 * 5) })
        #expect(oneDay.delivery?.timing == .fallback && oneDay.delivery?.reason == "fallback: 6 reads on 1 day")
        // Reads after the week or more than three weeks before it do not count.
        let outside = Self.reads(zone: "Europe/Warsaw", days: [-27, -26, -25, 7, 8], 19) + Self.reads(zone: "Europe/Warsaw", days: [1, 2], 19)
        let counted = await Self.compose(composer, Self.reader("f", zone: "Europe/Warsaw"), outside)
        #expect(counted.delivery?.tally.reads == 2 && counted.delivery?.timing == .fallback)
    }

    @Test func theControlGroupKeepsTheFallbackTime() async throws {
        let composer = try Self.composer(habit: HabitDelivery(control: ControlGroup(percent: 100)))
        let reads = Self.reads(zone: "Europe/Warsaw", days: [-20, -13, -6, 2, 5, 6], 19, 12)
        let user = await Self.compose(composer, Self.reader("c", zone: "Europe/Warsaw"), reads)
        #expect(user.delivery?.timing == .control && user.delivery?.reason == "control group")
        #expect(user.messages.first?.timing == .control && user.messages.first?.dueLocal == "09:00")
        #expect(user.messages.first?.availableAt == 1_774_854_000)
        // Readers without a habit are fallback, control group or not.
        let few = await Self.compose(composer, Self.reader("c", zone: "Europe/Warsaw"), Array(reads.prefix(3)))
        #expect(few.delivery?.timing == .fallback)
    }

    /// A reader enqueued after their habit hour is due at once, as today; `--send-at now` makes every
    /// message due at once with no quiet hours, the timing still recorded; without habit timing the
    /// outbox gets no timing and the delivery time.
    @Test func lateReadersSendAtNowAndRunsWithoutHabitBehaveAsBefore() async throws {
        let reads = Self.reads(zone: "Europe/Warsaw", days: [-20, -13, -6, 2, 5, 6], 19, 12)
        let reader = Self.reader("l", zone: "Europe/Warsaw")
        let late = await Self.compose(try Self.composer(now: 1_774_893_600), reader, reads)  // 20:00 CEST
        #expect(late.messages.first?.availableAt == 1_774_893_600 && late.messages.first?.timing == .habit)
        let atOnce = await Self.compose(try Self.composer(sendAt: .now), reader, reads)
        #expect(atOnce.messages.first?.availableAt == Self.now && atOnce.messages.first?.windowEnd == nil)
        #expect(atOnce.messages.first?.timing == .habit && atOnce.messages.first?.dueLocal == "19:00")
        let plain = await Self.compose(try Self.composer(habit: nil), reader, reads)
        #expect(plain.messages.first?.timing == nil && plain.messages.first?.dueLocal == "09:00")
        #expect(plain.messages.first?.availableAt == 1_774_854_000 && plain.delivery?.reason == nil)
        #expect(plain.messages.first?.report.contains("due_reason") == false)
        // Habit timing reads from a day before the local Monday three weeks back.
        let window = try Self.composer().calendar.window(forZone: "Europe/Warsaw").window
        #expect(try Self.composer().readsStart(of: window) == window.start - 22 * 86_400)
        #expect(try Self.composer(habit: nil).readsStart(of: window) == window.start - 21 * 86_400)
    }

    /// A run on each store writes `timing` and `due_local`; the summary counts users per timing; a
    /// rerun enqueues nothing twice; `timingReaders` counts each reader once.
    @Test(arguments: Backend.allCases) func aRunKeepsTheTimingInTheOutbox(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let week = try ISOWeek(parsing: "2026-W47")
        // Monday 23 November 2026 12:00Z: the week has ended everywhere.
        let now = Date(timeIntervalSince1970: 1_795_435_200)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        func at(_ day: Int, _ hour: Int) -> Int64 {
            Int64(calendar.date(from: DateComponents(year: 2026, month: 11, day: day, hour: hour, minute: 10))!.timeIntervalSince1970)
        }
        let readers = [
            Reader(id: "evening", locale: "en", timeZone: "UTC", optedOut: false,
                   devices: [Device(token: "tok-e1", platform: .android), Device(token: "tok-e2", platform: .web)]),
            Reader(id: "morning", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-m", platform: .android)]),
            Reader(id: "seldom", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-s", platform: .android)]),
        ]
        let article = Article(
            id: "a1", title: "Swift", url: "https://news.example/a1", imageURL: nil, topics: ["swift"], publishedAt: at(16, 8), readingMinutes: 3)
        let reads = [2, 5, 9, 16, 19, 21].map { ImportedRead(userID: "evening", articleID: "a1", readAt: at($0, 19), seconds: 60) }
            + [3, 6, 10, 17, 20].map { ImportedRead(userID: "morning", articleID: "a1", readAt: at($0, 10), seconds: 60) }
            + [ImportedRead(userID: "seldom", articleID: "a1", readAt: at(18, 12), seconds: 60)]
        _ = try await store.withImporter { importer in
            _ = try await importer.sink.write(.users(readers))
            _ = try await importer.sink.write(.articles([article]))
            return try await importer.sink.write(.reads(reads))
        }
        var configuration = WeeklyRunConfiguration(week: week)
        configuration.compose.habit = HabitDelivery()
        let first = try await Self.run(store.database, configuration: configuration, now: now)
        #expect(first.thisRun.timings == ["habit": 2, "fallback": 1])
        #expect(first.lines().contains("delivery timing (users): fallback 1, habit 2"))
        _ = try await Self.run(store.database, configuration: configuration, now: now)

        let rows = try await store.database.peek(limit: 10, state: nil)
        #expect(rows.count == 4)
        let byUser = Dictionary(grouping: rows, by: \.userID)
        #expect(byUser["evening"]?.allSatisfy { $0.timing == .habit && $0.dueLocal == "19:00" && $0.availableAt == 1_795_460_400 } == true)
        // 10:00 has passed at the run's noon: due at once, the chosen time still 10:00.
        #expect(byUser["morning"]?.first.map { [$0.timing?.rawValue, $0.dueLocal, String($0.availableAt)] } == ["habit", "10:00", "1795435200"])
        #expect(byUser["seldom"]?.first.map { [$0.timing?.rawValue, $0.dueLocal] } == ["fallback", "09:00"])
        let timing = try await store.database.readersByTiming(week: "2026-W47")
        #expect(timing == [TimingReaders(timing: "fallback", readers: 1), TimingReaders(timing: "habit", readers: 2)])

        // Sent but for the morning reader's; the evening reader opens on both devices (first 5
        // minutes after 19:00), the seldom one 90 minutes after 09:00 (their due time: the run's noon).
        try store.sql("UPDATE digest_outbox SET state = 'sent' WHERE user_id <> 'morning'")
        let evening = try #require(byUser["evening"]), seldom = try #require(byUser["seldom"]?.first)
        let events = [
            AppEvent(messageID: try #require(evening[0].messageID), type: .opened, at: 1_795_460_400 + 20 * 60),
            AppEvent(messageID: try #require(evening[1].messageID), type: .opened, at: 1_795_460_400 + 5 * 60 + 59),
            AppEvent(messageID: try #require(evening[1].messageID), type: .received, at: 1_795_460_400 + 60),
            AppEvent(messageID: try #require(seldom.messageID), type: .opened, at: seldom.availableAt + 90 * 60),
        ]
        _ = try await Self.record(store.database, events.enumerated().map { IndexedEvent(index: $0, event: $1) })
        #expect(
            try await store.database.readersByTiming(week: "2026-W47") == [
                TimingReaders(timing: "fallback", readers: 1, sent: 1, opened: 1, minutesToOpen: [90: 1]),
                TimingReaders(timing: "habit", readers: 2, sent: 1, opened: 1, minutesToOpen: [5: 1]),
            ])
    }

    static func record<D: DigestDatabase>(_ database: D, _ events: [IndexedEvent]) async throws -> EventBatchResult {
        try await database.withEventSink { try await $0.record(events, now: 1_795_500_000) }
    }

    static func run<D: DigestDatabase>(_ database: D, configuration: WeeklyRunConfiguration, now: Date) async throws -> RunSummary {
        try await WeeklyRun(database: database, templates: try TemplateCatalog(directory: DigestBinary.templates), configuration: configuration)
            .run(now: now)
    }
}
