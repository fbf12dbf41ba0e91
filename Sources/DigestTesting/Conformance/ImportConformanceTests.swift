import DigestCore
import DigestStore
import Foundation
import Testing
import DigestImport

/// `digest import` of one corpus of bad and strange lines (`Fixtures/import`: every skip reason of
/// docs/008-import.md at least once, and good lines around them) into SQLite and into PostgreSQL:
/// the same readers, devices, articles and reads, and the same report of skipped lines, line for line.
@Suite struct ImportConformanceTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/import")
    /// The report the corpus gives (`file:line: reason: detail`); `DIGEST_RECORD_GOLDENS=1` rewrites it.
    static let expectedReport = fixtures.appendingPathComponent("expected-report.txt")

    /// What a store holds after the import, and what the import said.
    struct Outcome: Equatable {
        var report: [String] = []
        var summaries: [String] = []
        var readers: [String: Reader] = [:]
        var articles: [String: Article] = [:]
        var reads: [String] = []
    }

    /// Every problem the importer reports, in order.
    /// Imports the corpus into a new store of `backend`, in batches of `batchSize` lines (small, so
    /// duplicates fall both inside a batch and across batches), and reads everything back.
    static func importCorpus(_ backend: Backend, batchSize: Int = 7) async throws -> Outcome {
        let store = try await StoreHarness(backend)
        let log = ImportProblemLog()
        var outcome = Outcome()
        outcome.summaries = try await store.withImporter { base in
            var importer = base
            importer.batchSize = batchSize
            importer.onProblem = { problem in
                let name = URL(fileURLWithPath: problem.file).lastPathComponent
                log.lines.append("\(name):\(problem.line ?? 0): \(problem.code?.rawValue ?? "-"): \(problem.reason)")
            }
            var summaries: [String] = []
            for kind in ImportKind.allCases {
                let summary = try await importer.importFile(fixtures.appendingPathComponent("\(kind.rawValue).jsonl").path, as: kind)
                let skipped = summary.skipped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                summaries.append(
                    "\(kind): \(summary.lines) lines, \(summary.written) written, \(summary.unchanged) unchanged, skipped: \(skipped), "
                        + "devices over limit: \(summary.devicesOverLimit)")
            }
            return summaries
        }
        outcome.report = log.lines
        try await store.withReader { reader in
            // In key order, as batches come (the SQLite reader walks reads and users together).
            let users = try await reader.users(idPrefix: "", limit: 10_000).sorted { $0.key < $1.key }
            for user in users {
                var stored = user.reader
                stored.devices.sort { $0.token < $1.token }
                outcome.readers[stored.id] = stored
            }
            for article in try await reader.articles(publishedFrom: -62_167_219_200, until: 300_000_000_000) {
                outcome.articles[article.id] = article
            }
            let reads = try await reader.reads(of: users, since: users.map { _ in -62_167_219_200 })
            for (user, events) in zip(users, reads) {
                outcome.reads += events.map { "\(user.reader.id) \($0.articleID) \($0.readAt) \($0.seconds)" }
            }
            outcome.reads.sort()
        }
        return outcome
    }

    @Test func theCorpusImportsTheSameOnSQLiteAndPostgreSQL() async throws {
        let sqlite = try await Self.importCorpus(.sqlite)
        let postgres = try await Self.importCorpus(.postgres)
        #expect(sqlite.report == postgres.report)
        #expect(sqlite.summaries == postgres.summaries)
        #expect(sqlite.readers == postgres.readers)
        #expect(sqlite.articles == postgres.articles)
        #expect(sqlite.reads == postgres.reads)
        // Batches of one line and of the default size give the same result (a batch's unknown users
        // and articles are reported when it is written, so the order of the report may differ).
        let unbatched = try await Self.importCorpus(.sqlite, batchSize: 1)
        let large = try await Self.importCorpus(.postgres, batchSize: 5_000)
        #expect(unbatched.report.sorted() == sqlite.report.sorted() && large.report.sorted() == sqlite.report.sorted())
        #expect(unbatched.readers == sqlite.readers && large.readers == sqlite.readers)
        #expect(unbatched.articles == sqlite.articles && large.articles == sqlite.articles)
        #expect(unbatched.reads == sqlite.reads && large.reads == sqlite.reads)
    }

    @Test func theCorpusSkipsWhatTheRulesSayWithEveryReasonAtLeastOnce() async throws {
        let outcome = try await Self.importCorpus(.sqlite)
        if ProcessInfo.processInfo.environment["DIGEST_RECORD_GOLDENS"] == "1" {
            try (outcome.report.joined(separator: "\n") + "\n").write(to: Self.expectedReport, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: Self.expectedReport, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(outcome.report == expected)
        let reasons = Set(outcome.report.compactMap { line in
            line.split(separator: ":", maxSplits: 3).dropFirst(2).first.flatMap { ImportSkipReason(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
        })
        #expect(reasons == Set(ImportSkipReason.allCases), "reasons the corpus never gives: \(Set(ImportSkipReason.allCases).subtracting(reasons))")
        // Batches of 7 lines: an earlier line of a duplicate id in an earlier batch was written, then
        // replaced (u-dup on line 42, a-dup on line 28), so it counts as written and as duplicate_id.
        // A reader with 21 devices goes in with all of them, counted apart from the skipped lines.
        #expect(outcome.summaries == [
            "users: 80 lines, 21 written, 0 unchanged, skipped: bad_date 1, bad_endpoint 2, bad_every 2, bad_from 1, bad_id 4, "
                + "bad_json 5, bad_locale 1, bad_paused_until 1, bad_platform 3, bad_preference_topic 2, bad_provider 1, "
                + "bad_subscription_keys 3, bad_time_zone 2, bad_token 8, bad_topic 1, conflicting_off 1, duplicate_id 2, "
                + "line_too_long 1, lone_surrogate 2, missing_field 4, not_an_object 1, not_utf8 2, too_deep 2, "
                + "too_many_preference_topics 1, wrong_type 5, devices over limit: 1",
            "articles: 34 lines, 8 written, 0 unchanged, skipped: bad_date 6, bad_id 1, bad_json 1, bad_language 1, bad_number 5, "
                + "bad_topics 1, bad_url 3, duplicate_id 1, line_too_long 1, lone_surrogate 1, missing_field 1, too_deep 1, wrong_type 4, "
                + "devices over limit: 0",
            "reads: 22 lines, 7 written, 1 unchanged, skipped: bad_date 2, bad_id 3, bad_number 3, lone_surrogate 1, too_deep 1, "
                + "unknown_article 1, unknown_user 2, wrong_type 1, devices over limit: 0",
        ])
    }

    /// The lines that go in, as the rules make them.
    @Test func goodAndStrangeLinesAreStoredAsTheRulesSay() async throws {
        let outcome = try await Self.importCorpus(.postgres)
        let readers = outcome.readers
        #expect(readers["u-bom"]?.devices == [Device(token: "tok-bom", platform: .android)])
        #expect(readers["u-crlf"]?.locale == "pl-PL" && readers["u-crlf"]?.devices.map(\.token) == ["tok-crlf"])
        #expect(readers["u-😀"]?.locale == "zh-Hans")
        #expect(readers["u-path"]?.locale == "../../etc/passwd", "stored as written; the run resolves it to en (LocaleResolutionTests)")
        #expect(readers["u-20-devices"]?.devices.count == 20 && readers["u-20-devices"]?.devicesOverLimit == 0)
        // 21 undated devices: the stores keep them all and read the 20 listed last (the first listed is
        // the one left out).
        #expect(readers["u-21-devices"]?.devices.map(\.token) == (1...20).map { "tok-21-\($0)" }.sorted())
        #expect(readers["u-21-devices"]?.devicesOverLimit == 1)
        #expect(readers["u-token-1024"]?.devices.first?.token.utf8.count == ImportLimits.maxTokenBytes)
        #expect(readers[String(repeating: "u", count: ImportLimits.maxIDBytes)] != nil)
        // Swift compares strings by canonical equivalence: look at the bytes.
        #expect(readers.keys.filter { $0.utf8.elementsEqual("u-\u{E9}".utf8) }.count == 1, "an id in NFC goes in")
        #expect(!readers.keys.contains { $0.utf8.elementsEqual("u-e\u{301}".utf8) }, "one not in NFC is skipped, never normalized")
        #expect(readers["u-dup"].map { ($0.locale, $0.devices) } ?? ("", []) == ("pl-PL", [Device(token: "tok-dup-3", platform: .ios)]))
        #expect(readers["u-deep-32"] != nil && readers["u-deep-33"] == nil)
        #expect(readers["u-unknown-fields"]?.optedOut == true && readers["u-last"] != nil)
        // APNs devices: iOS, the token's hex lower-cased, the topic kept; FCM beside them as before.
        let apnsToken = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
        #expect(
            readers["u-apns"]?.devices == [
                Device(token: apnsToken, platform: .ios, topic: "com.example.news", provider: .apns),
                Device(token: "tok-apns-fcm", platform: .android, provider: .fcm),
            ])
        #expect(readers["u-apns-200"]?.devices == [Device(token: String(repeating: "c", count: 200), platform: .ios, provider: .apns)])
        // Web Push devices: the endpoint is the token, the platform web whether given or not, the keys
        // kept as the browser wrote them; a token given too is the endpoint.
        let keys = Device.SubscriptionKeys(
            p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")
        #expect(
            readers["u-webpush"]?.devices == [
                Device(endpoint: "https://fcm.googleapis.com/fcm/send/dGVzdC1zdWJzY3JpYmVyLTE:APA91bHk", keys: keys),
                Device(token: "tok-webpush-fcm", platform: .web),
            ])
        #expect(
            readers["u-webpush-token"]?.devices == [
                Device(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk", keys: keys, registeredAt: 1_793_520_000)
            ])
        // Preferences: an object of defaults with off as optedOut says (the stores' own tests cover the
        // rest: PreferencesConformanceTests).
        #expect(readers["u-prefs-out"]?.preferences == ReaderPreferences(off: true) && readers["u-prefs-out"]?.optedOut == true)
        #expect(readers["u-prefs-defaults"]?.preferences == ReaderPreferences())
        #expect(readers.count == 20)

        let articles = outcome.articles
        #expect(articles["a-nul"]?.title == "Null title")
        #expect(articles["a-controls"].map { ($0.title, $0.topics, $0.readingMinutes) } ?? ("", [], 0) == ("Café au lait", ["data", "x"], 6))
        #expect(articles["a-controls"]?.title.unicodeScalars.count == 12, "NFC: é is one scalar")
        #expect(articles["a-żółć"]?.publishedAt == Timestamp.parse("2024-03-01T00:00:00Z"), "a leap second is the next second")
        #expect(articles["a-image-empty"].map { ($0.imageURL, $0.publishedAt) } ?? ("", 0) == (nil, 253_402_300_799))
        #expect(articles["a-dup"].map { ($0.title, $0.topics) } ?? ("", []) == ("Second", ["swift"]))
        #expect(articles["a-long-title"]?.title.hasSuffix("long long") == true)
        #expect(articles["a-crlf"]?.publishedAt == Timestamp.parse("2026-11-16T13:30:00Z"))
        #expect(articles.count == 7)

        #expect(outcome.reads == [
            "u-bom a-nul 1794943325 312",
            "u-crlf a-controls 1794942000 0",
            "u-dup a-dup 1794996000 60",
            "u-ok a-nul 1794985200 86400",
            "u-ok a-nul 1795003200 100",
            "u-path a-image-empty 1795089600 12",
            "u-\u{E9} a-żółć 1794999600 40",
        ].sorted())
    }

    /// The issue's case: on PostgreSQL a title with U+0000 stopped the whole import; it goes in
    /// without the NUL, and the lines after it go in too.
    @Test(arguments: Backend.allCases) func aNulTitleImportsWithTheNulRemoved(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let articles = try store.directory.write("articles.jsonl", lines: [
            #"{"id":"a1","title":"Before","url":"https://news.example/1","publishedAt":"2026-11-16T08:00:00Z"}"#,
            #"{"id":"a2","title":"Swift\u0000 on the server\u0000","url":"https://news.example/2","publishedAt":"2026-11-16T08:00:00Z"}"#,
            #"{"id":"a3","title":"After","url":"https://news.example/3","publishedAt":"2026-11-16T08:00:00Z"}"#,
        ])
        let summary = try await store.withImporter { try await $0.importFile(articles, as: .articles) }
        #expect(summary.written == 3 && summary.skipped.isEmpty)
        let stored = try await store.withReader { try await $0.articles(publishedFrom: 0, until: 4_000_000_000) }
        #expect(Set(stored.map(\.title)) == ["Before", "Swift on the server", "After"])
    }

    /// The issue's other case: a token with a newline was stored and sent; its line is skipped.
    @Test(arguments: Backend.allCases) func aTokenWithANewlineIsSkippedNotStored(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let users = try store.directory.write("users.jsonl", lines: [
            #"{"id":"u1","devices":[{"token":"abc\ndef","platform":"android"}]}"#,
            #"{"id":"u2","devices":[{"token":"abc\u2028def","platform":"android"}]}"#,
            #"{"id":"u3","devices":[{"token":"abcdef","platform":"android"}]}"#,
        ])
        let summary = try await store.withImporter { try await $0.importFile(users, as: .users) }
        #expect(summary.skipped == ["bad_token": 2] && summary.written == 1)
        #expect(try await store.withReader { try await $0.user(id: "u1") } == nil)
        #expect(try await store.withReader { try await $0.user(id: "u3") }?.reader.devices.map(\.token) == ["abcdef"])
    }

    /// `--strict` stops at the corpus's first bad line on both stores, with the lines before it written.
    @Test(arguments: Backend.allCases) func strictStopsAtTheFirstBadLineWithTheLinesBeforeItWritten(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let users = Self.fixtures.appendingPathComponent("users.jsonl").path
        do {
            _ = try await store.withImporter { base in
                var importer = base
                importer.strict = true
                return try await importer.importFile(users, as: .users)
            }
            Issue.record("a strict import of the corpus went through")
        } catch let error as ImportError {
            #expect(error.line == 4 && error.code == .badID)
        }
        let stored = try await store.withReader { try await $0.users(idPrefix: "", limit: 100) }
        #expect(stored.map(\.reader.id).sorted() == ["u-bom", "u-crlf", "u-ok"])
    }
}
