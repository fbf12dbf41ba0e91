import DigestCore
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

/// Rolling runs through the real binary on SQLite and PostgreSQL, at fixed instants: a reader in every UTC offset
/// gets the week's digest from the first hourly run after their local week ended, due at their
/// Monday 09:00; a late run never makes a message due at night; readers and devices added after
/// their zone's run get the week's digest in the next run, once.
@Suite struct RollingRunTests {
    /// One zone for every offset from UTC−12 to UTC+14 in the first days of November 2026, the
    /// :30 and :45 ones included. New York, St John's and Anchorage leave summer time on Sunday
    /// 1 November, inside week 2026-W44: their week ends an hour later than it began.
    static let zones = [
        "Etc/GMT+12", "Pacific/Pago_Pago", "Pacific/Honolulu", "Pacific/Marquesas", "America/Anchorage",
        "America/Los_Angeles", "America/Phoenix", "America/Regina", "America/New_York", "America/La_Paz",
        "America/St_Johns", "America/Sao_Paulo", "America/Noronha", "Atlantic/Cape_Verde", "UTC", "Africa/Lagos",
        "Africa/Johannesburg", "Europe/Moscow", "Asia/Tehran", "Asia/Dubai", "Asia/Kabul", "Asia/Karachi",
        "Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Yangon", "Asia/Bangkok", "Asia/Shanghai",
        "Australia/Eucla", "Asia/Tokyo", "Australia/Darwin", "Australia/Brisbane", "Australia/Adelaide",
        "Pacific/Noumea", "Pacific/Tarawa", "Pacific/Chatham", "Pacific/Tongatapu", "Pacific/Kiritimati",
    ]

    /// A user per zone (`u-<index>`, one Android device each), articles of the weeks before 2026-W44
    /// and a read for every user on Wednesday of that week.
    func importWorld(into db: String, in dir: TemporaryDirectory, zones: [String] = zones) async throws {
        let users = zones.enumerated().map { index, zone in
            #"{"id":"u-\#(index)","locale":"en","timeZone":"\#(zone)","devices":[{"token":"token-\#(index)","platform":"android"}]}"#
        }
        let articles = (1...6).map { n in
            #"{"id":"a\#(n)","title":"Story number \#(n)","url":"https://news.example/a\#(n)","topics":["swift"],"publishedAt":"2026-10-2\#(n)T08:00:00Z","readingMinutes":5}"#
        }
        let reads = zones.indices.map { index in
            #"{"userId":"u-\#(index)","articleId":"a1","readAt":"2026-10-28T12:00:00Z","seconds":240}"#
        }
        let files = [
            try dir.write("users.jsonl", lines: users), try dir.write("articles.jsonl", lines: articles),
            try dir.write("reads.jsonl", lines: reads),
        ]
        let imported = try await DigestBinary.run(["import", "--db", db] + files)
        #expect(imported.status == 0, "\(imported.stderr)")
    }

    /// Outbox rows as dedupe key → due time.
    func outbox(_ db: String) throws -> [String: Int64] {
        var rows: [String: Int64] = [:]
        if db.hasPrefix("postgres") {
            let lines = try PostgresCluster.shared().sql(
                "SELECT dedupe_key, extract(epoch FROM available_at)::bigint FROM digest_outbox", url: db)
            for line in lines.split(separator: "\n") {
                let fields = line.split(separator: "|")
                if fields.count == 2, let due = Int64(fields[1]) { rows[String(fields[0])] = due }
            }
            return rows
        }
        let connection = try SQLiteConnection(path: db)
        let statement = try connection.statement("SELECT dedupe_key, available_at FROM digest_outbox")
        while try statement.step() { rows[statement.string(0)] = statement.int64(1) }
        return rows
    }

    /// `zone`'s local wall time on 2 November 2026 (the Monday after 2026-W44) as a UTC instant.
    static func monday(_ zone: String, hour: Int, minute: Int = 0) -> Int64 {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let date = calendar.date(from: DateComponents(year: 2026, month: 11, day: 2, hour: hour, minute: minute))!
        return Int64(date.timeIntervalSince1970)
    }

    static func instant(_ text: String, plusHours hours: Int = 0) -> String {
        Timestamp.format(Timestamp.parse(text)! + Int64(hours) * 3600)
    }

    @Test(arguments: TestStore.allCases) func hourlyRunsReachEveryOffsetInTheFirstHourAndAreDueAtMondayNine(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await backend.make(in: dir, name: "rolling")
        try await importWorld(into: db, in: dir)
        // Hourly from the hour before 2026-W44 ends at UTC+14 (Sunday 10:00 UTC) to after it ended
        // at UTC−12 (Monday 12:00 UTC).
        var enqueuedAt: [String: Int64] = [:]
        var offsetsSeen: [String] = []
        for hour in 0...27 {
            let instant = Self.instant("2026-11-01T09:00:00Z", plusHours: hour)
            let run = try await DigestBinary.run(["run", "--db", db, "--as-of", instant, "--progress-interval", "0"])
            #expect(run.status == 0, "\(instant): \(run.stderr)")
            for line in run.stdout.split(separator: "\n") where line.hasPrefix("week 2026-W44: UTC offsets ") {
                offsetsSeen += line.dropFirst("week 2026-W44: UTC offsets ".count).prefix { $0 != "(" }
                    .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
            for key in try outbox(db).keys where enqueuedAt[key] == nil { enqueuedAt[key] = Timestamp.parse(instant)! }
        }
        let rows = try outbox(db)
        #expect(rows.count == Self.zones.count)
        for (index, zone) in Self.zones.enumerated() {
            let key = "2026-W44:u-\(index):\(OutboxMessage.tokenHash("token-\(index)"))"
            guard let due = rows[key], let enqueued = enqueuedAt[key] else {
                Issue.record("no message for \(zone)")
                continue
            }
            let weekEnd = Self.monday(zone, hour: 0)
            #expect(enqueued >= weekEnd && enqueued < weekEnd + 3600, "\(zone): enqueued at \(Timestamp.format(enqueued))")
            #expect(due == Self.monday(zone, hour: 9), "\(zone): due at \(Timestamp.format(due))")
            #expect(enqueued < due, "\(zone)")
        }
        // The summaries name the offsets each run covered: 38 zones, as they stood when the week ended.
        #expect(Set(offsetsSeen).count == 38, "\(offsetsSeen)")
        #expect(offsetsSeen.contains("+05:45") && offsetsSeen.contains("-09:30") && offsetsSeen.contains("+13:45"))
        // New York ends the week on standard time: -04:00 is La Paz's alone (38 distinct offsets for 38 zones).
        #expect(offsetsSeen.filter { $0 == "-04:00" }.count == 1 && offsetsSeen.contains("-05:00"), "\(offsetsSeen)")
        // Once every zone is done, the next hour has nothing to do.
        let after = try await DigestBinary.run(["run", "--db", db, "--as-of", "2026-11-02T14:00:00Z"])
        #expect(after.status == 0)
        #expect(!after.stdout.contains("2026-W44: UTC offsets"), "\(after.stdout)")
        #expect(try outbox(db) == rows)
    }

    @Test(arguments: TestStore.allCases) func aLateFirstRunNeverMakesAMessageDueInQuietHours(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await backend.make(in: dir, name: "rolling")
        try await importWorld(into: db, in: dir)
        // The scheduler was off until Monday 15:00 UTC: 09:00 has passed everywhere east of UTC−6.
        let now = Timestamp.parse("2026-11-02T15:00:00Z")!
        let run = try await DigestBinary.run(["run", "--db", db, "--as-of", Timestamp.format(now)])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try outbox(db)
        #expect(rows.count == Self.zones.count)
        for (index, zone) in Self.zones.enumerated() {
            guard let due = rows["2026-W44:u-\(index):\(OutboxMessage.tokenHash("token-\(index)"))"] else {
                Issue.record("no message for \(zone)")
                continue
            }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: zone)!
            let local = calendar.dateComponents([.hour, .minute], from: Date(timeIntervalSince1970: Double(due)))
            let minute = local.hour! * 60 + local.minute!
            #expect(minute >= 8 * 60 && minute < 21 * 60, "\(zone): due at \(local.hour!):\(local.minute!) local")
            let nine = Self.monday(zone, hour: 9)
            if nine >= now {
                #expect(due == nine, "\(zone): 09:00 is still ahead")
            } else if minute > 8 * 60 {
                #expect(due == now, "\(zone): outside quiet hours now, due at once")
            } else {
                #expect(due > now, "\(zone): held until 08:00")
            }
        }
        // Auckland-like zones east of +12 are in their night: Tonga (UTC+13) is at 04:00 on Tuesday.
        #expect(rows["2026-W44:u-36:\(OutboxMessage.tokenHash("token-36"))"] == Timestamp.parse("2026-11-02T19:00:00Z"))
    }

    /// The scheduler was off for two weeks: the next run catches the missed weeks up, oldest first,
    /// and no message of theirs is due in the reader's night.
    @Test(arguments: TestStore.allCases) func missedWeeksAreCaughtUpOldestFirstAndNeverDueAtNight(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await backend.make(in: dir, name: "rolling")
        try await importWorld(into: db, in: dir, zones: ["Europe/Warsaw", "Asia/Tokyo"])
        let later = try dir.write("reads-later.jsonl", lines: [0, 1].flatMap { index in
            ["2026-11-04", "2026-11-11"].map { day in
                #"{"userId":"u-\#(index)","articleId":"a2","readAt":"\#(day)T12:00:00Z","seconds":240}"#
            }
        })
        #expect(try await DigestBinary.run(["import", "--db", db, later]).status == 0)
        let first = try await DigestBinary.run(["run", "--db", db, "--as-of", "2026-11-01T23:30:00Z"])
        #expect(first.status == 0 && first.stdout.contains("messages: 2 built, 2 enqueued"), "\(first.stdout)")
        // Back on Monday of 2026-W47 at 15:00 UTC: 16:00 in Warsaw, midnight in Tokyo.
        let now = Timestamp.parse("2026-11-16T15:00:00Z")!
        let back = try await DigestBinary.run(["run", "--db", db, "--as-of", Timestamp.format(now)])
        #expect(back.status == 0, "\(back.stderr)")
        let weeks = back.stdout.split(separator: "\n").filter { $0.hasPrefix("week 2026") }.map { $0.prefix(13) }
        #expect(weeks == ["week 2026-W44", "week 2026-W45", "week 2026-W46"], "\(back.stdout)")
        let rows = try outbox(db)
        #expect(rows.count == 6)
        for week in ["2026-W45", "2026-W46"] {
            #expect(rows["\(week):u-0:\(OutboxMessage.tokenHash("token-0"))"] == now, "Warsaw is awake: due at once")
            #expect(rows["\(week):u-1:\(OutboxMessage.tokenHash("token-1"))"] == Timestamp.parse("2026-11-16T23:00:00Z"),
                    "Tokyo sleeps: due at 08:00 local")
        }
    }

    @Test(arguments: TestStore.allCases) func readersAndDevicesAddedLateGetTheWeekInTheNextRunOnce(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await backend.make(in: dir, name: "rolling")
        try await importWorld(into: db, in: dir, zones: ["Europe/Warsaw", "Asia/Tokyo"])
        let optedOut = try dir.write("users-opted-out.jsonl", lines: [
            #"{"id":"u-back","locale":"en","timeZone":"Europe/Warsaw","optedOut":true,"devices":[{"token":"token-back","platform":"web"}]}"#
        ])
        #expect(try await DigestBinary.run(["import", "--db", db, optedOut]).status == 0)
        // Both zones' weeks ended (Tokyo 15:00Z, Warsaw 23:00Z on Sunday), not yet everywhere: --week
        // takes the readers whose week has ended, as the hourly runs do.
        let first = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W44", "--as-of", "2026-11-01T23:30:00Z"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("messages: 2 built, 2 enqueued"), "\(first.stdout)")
        #expect(first.stdout.contains("skipped: opted_out 1"), "\(first.stdout)")
        // Then the app exports: a new reader in Warsaw, a second device for the Tokyo reader, and the
        // reader who had opted out opts back in.
        let users = try dir.write("users-later.jsonl", lines: [
            #"{"id":"u-0","locale":"en","timeZone":"Europe/Warsaw","devices":[{"token":"token-0","platform":"android"}]}"#,
            #"{"id":"u-1","locale":"en","timeZone":"Asia/Tokyo","devices":[{"token":"token-1","platform":"android"},{"token":"token-1b","platform":"ios"}]}"#,
            #"{"id":"u-new","locale":"en","timeZone":"Europe/Warsaw","devices":[{"token":"token-new","platform":"android"}]}"#,
            #"{"id":"u-back","locale":"en","timeZone":"Europe/Warsaw","optedOut":false,"devices":[{"token":"token-back","platform":"web"}]}"#,
        ])
        let reads = try dir.write("reads-later.jsonl", lines: [
            #"{"userId":"u-new","articleId":"a2","readAt":"2026-10-29T12:00:00Z","seconds":240}"#,
            #"{"userId":"u-back","articleId":"a3","readAt":"2026-10-29T12:00:00Z","seconds":240}"#,
        ])
        #expect(try await DigestBinary.run(["import", "--db", db, users, reads]).status == 0)
        let second = try await DigestBinary.run(["run", "--db", db, "--as-of", "2026-11-02T00:00:00Z"])
        #expect(second.status == 0, "\(second.stderr)")
        // Three new messages: the new reader's, the new device's and the returning reader's; the Tokyo
        // reader's first device already had the week's digest.
        #expect(second.stdout.contains("messages: 4 built, 3 enqueued, 1 already in the outbox"), "\(second.stdout)")
        let rows = try outbox(db)
        #expect(rows.count == 5)
        #expect(rows["2026-W44:u-new:\(OutboxMessage.tokenHash("token-new"))"] == Self.monday("Europe/Warsaw", hour: 9))
        #expect(rows["2026-W44:u-back:\(OutboxMessage.tokenHash("token-back"))"] == Self.monday("Europe/Warsaw", hour: 9))
        #expect(rows["2026-W44:u-1:\(OutboxMessage.tokenHash("token-1b"))"] == Self.monday("Asia/Tokyo", hour: 9))
        // The hours after have nothing left to do for the week.
        let third = try await DigestBinary.run(["run", "--db", db, "--as-of", "2026-11-02T01:00:00Z"])
        #expect(third.status == 0)
        #expect(!third.stdout.contains("enqueued") || third.stdout.contains("0 enqueued"), "\(third.stdout)")
        #expect(try outbox(db) == rows)
    }
}
