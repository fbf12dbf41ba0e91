import DigestCore
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

/// The whole flow through the real binary on temporary SQLite files.
@Suite struct WeeklyRunEndToEndTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    func importFixtures(into db: String) async throws -> DigestBinary.Output {
        try await DigestBinary.run(["import", "--db", db] + ["users", "articles", "reads"].map {
            Self.fixtures.appendingPathComponent("\($0).jsonl").path
        })
    }

    /// Outbox rows as dedupe key → (available_at, report, message).
    func outbox(_ db: String) throws -> [String: [String]] {
        let connection = try SQLiteConnection(path: db)
        let statement = try connection.statement("SELECT dedupe_key, available_at, report, message FROM digest_outbox")
        var rows: [String: [String]] = [:]
        while try statement.step() {
            rows[statement.string(0)] = [String(statement.int64(1)), statement.string(2), statement.string(3)]
        }
        return rows
    }

    @Test func fixtureUsersGetTheGoldenMessages() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        await #expect(try importFixtures(into: db).status == 0)
        // Scheduled hourly from the moment the week ends at UTC+14 to after it has ended everywhere:
        // each reader's message is enqueued by the first run after their local week ended, due at
        // their Monday 09:00 (Warsaw 08:00Z, Shanghai 01:00Z, New York 14:00Z, Mars/Olympus as UTC).
        var stdout = ""
        for hour in 0...27 {
            let instant = Timestamp.format(Timestamp.parse("2026-11-15T10:00:00Z")! + Int64(hour) * 3600)
            let run = try await DigestBinary.run(["run", "--db", db, "--as-of", instant])
            #expect(run.status == 0, "\(run.stderr)")
            stdout += run.stdout
        }
        #expect(stdout.contains("skipped: no_devices 1, opted_out 1"))
        #expect(stdout.contains("1 time zone (UTC)"))
        // Before Shanghai's Sunday midnight (16:00Z) no fixture zone has ended the week.
        #expect(stdout.components(separatedBy: "no zone has ended a week that is still to do").count - 1 == 6, "\(stdout)")
        let enqueued = stdout.split(separator: "\n").filter { $0.hasPrefix("messages: ") && !$0.hasPrefix("messages: 0 built") }
        #expect(enqueued == ["messages: 1 built, 1 enqueued, 0 already in the outbox", "messages: 2 built, 2 enqueued, 0 already in the outbox",
                             "messages: 1 built, 1 enqueued, 0 already in the outbox", "messages: 1 built, 1 enqueued, 0 already in the outbox"], "\(stdout)")

        let golden = try String(contentsOf: Self.fixtures.appendingPathComponent("golden-2026-W46.tsv"), encoding: .utf8)
        var expected: [String: [String]] = [:]
        for line in golden.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            expected[fields[0]] = Array(fields.dropFirst())
        }
        let actual = try outbox(db)
        #expect(Set(actual.keys) == Set(expected.keys))
        for (key, row) in expected {
            #expect(actual[key] == row, "row \(key)")
        }
        // Every key is week:user:sha256(token) of a real device.
        #expect(actual["2026-W46:u-pl:\(OutboxMessage.tokenHash("pl-android-token-0001"))"] != nil)
        #expect(actual["2026-W46:u-pl:\(OutboxMessage.tokenHash("pl-ios-token-0002"))"] != nil)
        // The row keeps the id its message carries (its run's instant and place, then a hash of the
        // dedupe key) and the template locale that composed it (zh-CN resolves to the zh-Hans folder).
        let rows = try SQLiteConnection(path: db).statement("SELECT dedupe_key, message_id, locale, message FROM digest_outbox")
        var locales: [String: String] = [:]
        while try rows.step() {
            let key = rows.string(0), id = rows.string(1)
            #expect(id.count == OutboxMessage.messageIDLength && id.hasSuffix(OutboxMessage.messageID(dedupeKey: key).prefix(14)))
            #expect(rows.string(3).contains(#""message_id":"\#(id)""#))
            locales[String(key.split(separator: ":")[1])] = rows.optionalString(2)
        }
        #expect(locales == ["u-pl": "pl", "u-zh": "zh-Hans", "u-quiet": "en", "u-mars": "ru"])
    }

    @Test func reimportAndRerunChangeNothing() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        _ = try await importFixtures(into: db)
        let again = try await importFixtures(into: db)
        #expect(again.status == 0)
        #expect(again.stdout.contains("users: 6 lines, 0 new or changed, 6 unchanged"))
        #expect(again.stdout.contains("reads: 10 lines, 0 new or changed, 10 unchanged"))

        #expect(try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"]).status == 0)
        let before = try outbox(db)
        let rerun = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--send-at", "now"])
        #expect(rerun.status == 0)
        #expect(rerun.stdout.contains("already complete"))
        #expect(rerun.stdout.contains("0 enqueued"))
        #expect(try outbox(db) == before)
    }

    @Test func aKilledRunResumesWithExactlyOneMessagePerDevice() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        // No images: the resumed run below has no attachment store, so its messages must match a text-only demo.
        let demo = try await DigestBinary.run([
            "demo", "--out", dir.path("demo"), "--users", "3000", "--images", "0", "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--progress-interval", "100",
        ])
        #expect(demo.status == 0, "\(demo.stderr)")
        // A fresh database with the same data, run a reader a batch (3,000 commits: batches of 10 were
        // all done before the kill once composing got faster) and killed after three commits.
        let data = dir.url.appendingPathComponent("demo/data")
        _ = try await DigestBinary.run(["import", "--db", db] + ["users", "articles", "reads"].map { data.appendingPathComponent("\($0).jsonl").path })
        let killed = try await DigestBinary.runAndKill(
            ["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--batch-size", "1", "--progress-interval", "0"],
            afterLines: 4, containing: "progress:")
        #expect(killed, "the run must be killed while it was still going")
        let partial = try outbox(db).count
        let expected = try outbox(dir.path("demo/digest.sqlite"))
        #expect(partial > 0 && partial < expected.count, "partial \(partial) of \(expected.count)")

        let resumed = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("resumed after user key"))
        let rows = try outbox(db)
        // Same keys, same messages as the uninterrupted demo run: one message per eligible device. Only
        // the ids differ, which lead with each message's place in its run (batches of 1 here, of
        // 1,000 in the demo); the hash of the dedupe key that ends them is the same.
        #expect(Set(rows.keys) == Set(expected.keys))
        for (key, row) in expected {
            #expect(rows[key].map { Array($0.dropFirst()).map(withoutIDPositions) } == Array(row.dropFirst()).map(withoutIDPositions), "\(key)")
        }
        // Every device of a reader with messages has one; a reader without any is opted out, has no
        // device, or is dormant: no read in 2026-W43 to W46 in any zone.
        var perUser: [String: Int] = [:]
        for key in rows.keys { perUser[String(key.split(separator: ":")[1]), default: 0] += 1 }
        var lastRead: [String: String] = [:]
        for line in try String(contentsOf: data.appendingPathComponent("reads.jsonl"), encoding: .utf8).split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let (user, at) = (object["userId"] as! String, object["readAt"] as! String)
            if at >= "2026-10-19T12:00:00Z" && at < "2026-11-15T10:00:00Z" { lastRead[user] = at }
        }
        for line in try String(contentsOf: data.appendingPathComponent("users.jsonl"), encoding: .utf8).split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let id = object["id"] as! String
            let devices = (object["devices"] as? [Any])?.count ?? 0
            if object["optedOut"] as? Bool == true || devices == 0 {
                #expect(perUser[id] == nil, "\(id)")
            } else if let count = perUser[id] {
                #expect(count == devices, "\(id)")
            } else {
                #expect(lastRead[id] == nil, "\(id) read at \(lastRead[id] ?? "") but got nothing")
            }
        }
    }

    @Test func aSecondRunIsRefusedWhileTheLockIsHeld() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        _ = try await importFixtures(into: db)
        let lock = try RunLock(path: db + ".lock")
        let refused = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("another digest run holds the lock"))
        // An hourly rolling run leaves the hour's work to the run holding the lock: one line, exit 0.
        let hourly = try await DigestBinary.run(["run", "--db", db, "--as-of", "2026-11-16T12:00:00Z"])
        #expect(hourly.status == 0, "\(hourly.stderr)")
        #expect(hourly.stdout == "another digest run holds the lock on \(db): leaving this hour's work to it\n", "\(hourly.stdout)")
        #expect(try outbox(db).isEmpty)
        withExtendedLifetime(lock) {}
    }

    @Test func aCorruptDatabaseIsAClearError() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("corrupt.sqlite")
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: db))
        let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("file is not a database"))
        #expect(run.stderr.contains(db))
    }

    @Test(arguments: [
        (["--week", "2026-W30"], "no reads in week 2026-W30"),
        (["--week", "2099-W01"], "has not ended"),
        (["--week", "2025-W53"], "does not exist"),
        (["--week", "last week"], "not an ISO week"),
        (["--send-at", "tomorrow"], "--send-at takes"),
    ])
    func badWeeksAndOptionsFailClearly(arguments: [String], message: String) async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        _ = try await importFixtures(into: db)
        let run = try await DigestBinary.run(["run", "--db", db] + arguments)
        #expect(run.status != 0)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test func badLinesAreReportedWithFileAndLineAndSkipped() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let users = try dir.write("users.jsonl", lines: [
            #"{"id":"u1","locale":"en","timeZone":"UTC","devices":[{"token":"t1","platform":"android"}]}"#,
            #"{"id":"u2","locale":"en","timeZone":"UTC","devices":[{"token":"t2","platform":"blackberry"}]}"#,
            #"not json"#,
            #"{"locale":"en"}"#,
        ])
        let articles = try dir.write("articles.jsonl", lines: [
            #"{"id":"a1","title":"T","url":"https://x.example/1","imageUrl":null,"topics":[],"publishedAt":"2026-11-10T00:00:00Z","readingMinutes":3}"#,
            #"{"id":"a2","title":"T","url":"ftp://x.example/2","imageUrl":null,"topics":[],"publishedAt":"2026-11-10T00:00:00Z","readingMinutes":3}"#,
            #"{"id":"a3","title":"T","url":"https://x.example/3","imageUrl":null,"topics":[],"publishedAt":"yesterday","readingMinutes":3}"#,
        ])
        let reads = try dir.write("reads.jsonl", lines: [
            #"{"userId":"u1","articleId":"a1","readAt":"2026-11-11T10:00:00Z","seconds":60}"#,
            #"{"userId":"nobody","articleId":"a1","readAt":"2026-11-11T10:00:00Z","seconds":60}"#,
            #"{"userId":"u1","articleId":"missing","readAt":"2026-11-11T10:00:00Z","seconds":60}"#,
        ])
        let result = try await DigestBinary.run(["import", "--db", db, users, articles, reads])
        #expect(result.status == 0)
        #expect(result.stderr.contains("\(users):2: bad_platform: user 'u2': devices[0]: unknown platform 'blackberry'"))
        #expect(result.stderr.contains("\(users):3: bad_json: not JSON"))
        #expect(result.stderr.contains("\(users):4: missing_field: missing field 'id'"))
        #expect(result.stderr.contains("\(articles):2: bad_url: article 'a2': url must be http or https"))
        #expect(result.stderr.contains("\(articles):3: bad_date: article 'a3': publishedAt 'yesterday'"))
        #expect(result.stderr.contains("\(reads):2: unknown_user: unknown user 'nobody'"))
        #expect(result.stderr.contains("\(reads):3: unknown_article: unknown article 'missing'"))
        #expect(result.stdout.contains("reads: 3 lines, 1 new or changed, 0 unchanged, 2 skipped (unknown_article 1, unknown_user 1)"))

        let strict = try await DigestBinary.run(["import", "--db", dir.path("strict.sqlite"), "--strict", users])
        #expect(strict.status != 0)
        #expect(strict.stderr.contains("\(users):2:"))
    }

    @Test func queueStatsAndPeekShowTheOutboxWithTokensMasked() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        _ = try await importFixtures(into: db)
        _ = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        let stats = try await DigestBinary.run(["queue", "stats", "--db", db])
        #expect(stats.stdout.contains("by state: ready 5"))
        #expect(stats.stdout.contains("by platform: android 2, ios 2, web 1"))
        let peek = try await DigestBinary.run(["queue", "peek", "--db", db, "--limit", "10"])
        #expect(peek.stdout.split(separator: "\n").count == 5)
        #expect(!peek.stdout.contains("pl-android-token-0001"))
        #expect(peek.stdout.contains("…0001"))
        let ready = try await DigestBinary.run(["queue", "peek", "--db", db, "--state", "ready", "--limit", "10"])
        #expect(ready.status == 0 && ready.stdout.split(separator: "\n").count == 5)
        let expired = try await DigestBinary.run(["queue", "peek", "--db", db, "--state", "expired"])
        #expect(expired.status == 0 && expired.stdout.isEmpty)
        let unknown = try await DigestBinary.run(["queue", "peek", "--db", db, "--state", "gone"])
        #expect(unknown.status == 64 && unknown.stderr.contains("unknown state 'gone': one of ready, leased, sent, dead, expired"))
        let migrate = try await DigestBinary.run(["migrate", "--db", db])
        #expect(migrate.stdout.contains("schema is current"))
    }
}
