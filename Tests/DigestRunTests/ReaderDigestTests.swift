import DigestCore
import DigestPostgres
import DigestRun
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing
import DigestImport

/// What a reader gets, run after run on both stores: picks in their languages, never something they
/// read (whenever), never last weeks' picks again, on their topics of the last weeks, and nothing
/// while they are dormant.
@Suite struct ReaderDigestTests {
    enum Backend: String, CaseIterable, Sendable { case sqlite, postgres }

    static let languages: [String?] = ["en", "ru", "pl-PL", "zh-Hans", "de", nil]
    static let topics = ["science", "gardening", "politics"]
    static let day: Int64 = 86_400
    /// 2026-10-12T00:00Z, the Monday of 2026-W42.
    static let firstDay: Int64 = 1_791_763_200

    /// Six articles a day from 2026-10-12 to 2026-11-22, one per language (the last without one), all
    /// on the day's topic; the id says the day, language and topic.
    static let articles: [Article] = (0..<42).flatMap { day -> [Article] in
        let topic = topics[day % topics.count]
        return languages.enumerated().map { index, language in
            Article(
                id: "d\(day)-\(language ?? "none")-\(topic)", title: "Article \(day) \(index)",
                url: "https://news.example/\(day)/\(index)", imageURL: nil, topics: [topic],
                publishedAt: firstDay + Int64(day) * Self.day + 8 * 3600 + Int64(index) * 60, readingMinutes: 4,
                language: language)
        }
    } + [
        // A story republished inside the window that u-repub read in 2026-W40.
        Article(
            id: "repub", title: "Republished", url: "https://news.example/repub", imageURL: nil,
            topics: ["science", "gardening", "politics"], publishedAt: 1_794_441_600 + 20 * 3600, readingMinutes: 4, language: "en"),
    ]

    static func language(of id: String) -> String? {
        articles.first { $0.id == id }?.language.flatMap(LanguageTag.primary)
    }

    static func iso(_ seconds: Int64) -> String { Timestamp.format(seconds) }

    /// Writes the users, articles and reads files and imports them.
    static func importHistory(into database: some DigestDatabase, reads: [(String, String, Int64)], in dir: TemporaryDirectory) async throws {
        let users = ["u-ruen": "ru-RU", "u-repub": "en-US", "u-silent": "pl-PL", "u-dormant": "en-GB"].sorted { $0.key < $1.key }
            .map { id, locale in
                #"{"id":"\#(id)","locale":"\#(locale)","timeZone":"UTC","devices":[{"token":"token-\#(id)","platform":"android"}]}"#
            }
        let articleLines = articles.map { article in
            let language = article.language.map { #","language":"\#($0)""# } ?? ""
            return #"{"id":"\#(article.id)","title":"\#(article.title)","url":"\#(article.url)","topics":["\#(article.topics.joined(separator: "\",\""))"],"publishedAt":"\#(iso(article.publishedAt))","readingMinutes":4\#(language)}"#
        }
        let readLines = reads.map { user, article, at in
            #"{"userId":"\#(user)","articleId":"\#(article)","readAt":"\#(iso(at))","seconds":120}"#
        }
        try await database.withImportSink { sink in
            let importer = HistoryImporter(sink: sink)
            for (kind, lines) in [(ImportKind.users, users), (.articles, articleLines), (.reads, readLines)] {
                let path = dir.path("\(kind.rawValue)-\(lines.count).jsonl")
                try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
                let report = try await importer.importFile(path, as: kind)
                #expect(report.skipped.isEmpty, "\(kind): \(report)")
            }
        }
    }

    /// Day `n` (from 2026-10-12) at noon UTC.
    static func noon(_ day: Int) -> Int64 { firstDay + Int64(day) * Self.day + 12 * 3600 }

    static let history: [(String, String, Int64)] = {
        var reads: [(String, String, Int64)] = []
        // u-ruen reads one English and one Russian science or politics article every week, W43 to W47.
        for week in 1...5 {
            let day = week * 7 + 1
            let topic = topics[day % topics.count]
            reads.append(("u-ruen", "d\(day)-en-\(topic)", noon(day)))
            reads.append(("u-ruen", "d\(day)-ru-\(topic)", noon(day) + 60))
        }
        // u-repub read the republished story in 2026-W40 (before its date), and reads English in W46.
        reads.append(("u-repub", "repub", 1_790_812_800 + 3600))
        reads.append(("u-repub", "d30-en-science", noon(30)))
        // u-silent read Polish gardening in W43 and W44 (two and three weeks before W46), nothing since.
        reads.append(("u-silent", "d16-pl-PL-gardening", noon(16)))
        reads.append(("u-silent", "d10-pl-PL-gardening", noon(10)))
        // u-dormant last read in 2026-W40.
        reads.append(("u-dormant", "d0-en-science", noon(0) - 10 * Self.day))
        return reads
    }()

    func open(_ backend: Backend, in dir: TemporaryDirectory) async throws -> any DigestDatabase {
        switch backend {
        case .sqlite:
            let database = SQLiteDatabase.sqlite(path: dir.path("digest.sqlite"))
            _ = try await database.migrate()
            return database
        case .postgres:
            let database = try PostgresDatabase.postgres(url: try PostgresCluster.shared().makeDatabase()).runningUntilClosed()
            _ = try await database.migrate()
            return database
        }
    }

    func run(_ database: some DigestDatabase, week: String, dormantAfter: Int = 4) async throws -> RunCounters {
        var configuration = WeeklyRunConfiguration(week: try ISOWeek(parsing: week))
        configuration.sendAt = .now
        configuration.allowEmptyWeek = true
        configuration.digest.dormantAfterWeeks = dormantAfter
        let run = WeeklyRun(database: database, templates: try TemplateCatalog(directory: DigestBinary.templates), configuration: configuration)
        return try await run.run(now: Date(timeIntervalSince1970: 1_795_600_000)).thisRun
    }

    func picks(_ database: some DigestDatabase, week: String, user: String) async throws -> [String]? {
        guard let row = try await database.outboxRows(week: week, userID: user).first else { return nil }
        let report = try JSONSerialization.jsonObject(with: Data(row.report.utf8)) as! [String: Any]
        return report["picks"] as? [String]
    }

    @Test(arguments: Backend.allCases) func picksFollowTheReader(backend: Backend) async throws {
        let dir = try TemporaryDirectory()
        let database = try await open(backend, in: dir)
        try await Self.importHistory(into: database, reads: Self.history, in: dir)
        var previous: [[String]] = []
        // Dormant: u-dormant (last read in W40) every week; u-repub (W40, then W46) in W44 and W45.
        for (week, dormant) in [("2026-W44", 2), ("2026-W45", 2), ("2026-W46", 1)] {
            let counters = try await run(database, week: week)
            // A reader of Russian and English never gets Polish, Chinese or German picks.
            let ruen = try #require(try await picks(database, week: week, user: "u-ruen"))
            #expect(ruen.count == 5, "\(week)")
            for pick in ruen {
                #expect([nil, "ru", "en"].contains(Self.language(of: pick)), "\(week): \(pick)")
            }
            // No article repeats from the two previous weeks.
            for earlier in previous.suffix(2) {
                #expect(Set(ruen).isDisjoint(with: earlier), "\(week) repeats \(Set(ruen).intersection(earlier))")
            }
            previous.append(ruen)
            // A dormant reader gets nothing, and is counted.
            #expect(try await picks(database, week: week, user: "u-dormant") == nil)
            #expect(counters.skipped["dormant"] == dormant, "\(week): \(counters.skipped)")
        }
        // A republished article read weeks ago is never picked; the reader reads English only.
        let repub = try #require(try await picks(database, week: "2026-W46", user: "u-repub"))
        #expect(!repub.contains("repub"))
        #expect(repub.allSatisfy { [nil, "en"].contains(Self.language(of: $0)) })
        // A reader silent this week gets picks on last weeks' topics, in their language.
        let silent = try #require(try await picks(database, week: "2026-W46", user: "u-silent"))
        #expect(silent.count == 5)
        #expect(silent.allSatisfy { $0.hasSuffix("-gardening") }, "\(silent)")
        #expect(silent.allSatisfy { [nil, "pl"].contains(Self.language(of: $0)) })

        // One read brings the dormant reader back.
        try await Self.importHistory(into: database, reads: [("u-dormant", "d36-en-science", Self.noon(36))], in: dir)
        let counters = try await run(database, week: "2026-W47")
        #expect(counters.skipped["dormant"] == nil)
        let back = try #require(try await picks(database, week: "2026-W47", user: "u-dormant"))
        #expect(!back.isEmpty)
    }

    /// `--dormant-after 0` never skips a reader.
    @Test func dormancyCanBeTurnedOff() async throws {
        let dir = try TemporaryDirectory()
        let database = try await open(.sqlite, in: dir)
        try await Self.importHistory(into: database, reads: Self.history, in: dir)
        let counters = try await run(database, week: "2026-W46", dormantAfter: 0)
        #expect(counters.skipped["dormant"] == nil)
        #expect(try await picks(database, week: "2026-W46", user: "u-dormant") != nil)
    }
}
