import DigestCore
import DigestImport
import DigestPostgres
import DigestRun
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

/// What readers chose, imported from `users.jsonl` and obeyed by weekly runs on both stores, at a
/// fixed instant: muted topics never picked, a followed topic first, a pace of 2 weeks, a pause, off.
@Suite struct PreferenceRunTests {
    typealias Backend = ReaderDigestTests.Backend

    /// Each reader's `users.jsonl` line: English, in UTC, one Android device, and their preferences.
    static let users: [(id: String, extra: String)] = [
        ("u-plain", ""),
        ("u-mute", #","preferences":{"mute":["politics"]}"#),
        ("u-follow", #","preferences":{"follow":["gardening"]}"#),
        ("u-pace", #","preferences":{"every":2,"from":"2026-W45"}"#),
        // The run's messages are due at its instant (2026-11-25T09:46:40Z): paused through that date.
        ("u-pause", #","preferences":{"pausedUntil":"2026-11-25"}"#),
        ("u-pause-over", #","preferences":{"pausedUntil":"2026-11-24"}"#),
        ("u-off", #","optedOut":true"#),
    ]

    /// Every reader reads one English science and one English politics article each day of W43 to W47
    /// (so no one is dormant and politics is everyone's main interest).
    static var reads: [(String, String, Int64)] {
        var reads: [(String, String, Int64)] = []
        for user in users {
            for day in 7..<42 where day % 3 != 1 {
                let topic = ReaderDigestTests.topics[day % 3]
                reads.append((user.id, "d\(day)-en-\(topic)", ReaderDigestTests.noon(day)))
            }
        }
        return reads
    }

    static func importAll(into database: some DigestDatabase, in dir: TemporaryDirectory) async throws {
        let userLines = users.map {
            #"{"id":"\#($0.id)","locale":"en-GB","timeZone":"UTC","devices":[{"token":"token-\#($0.id)","platform":"android"}]\#($0.extra)}"#
        }
        let articleLines = ReaderDigestTests.articles.map { article in
            let language = article.language.map { #","language":"\#($0)""# } ?? ""
            return #"{"id":"\#(article.id)","title":"\#(article.title)","url":"\#(article.url)","topics":["\#(article.topics.joined(separator: "\",\""))"],"publishedAt":"\#(ReaderDigestTests.iso(article.publishedAt))","readingMinutes":4\#(language)}"#
        }
        let readLines = reads.map { user, article, at in
            #"{"userId":"\#(user)","articleId":"\#(article)","readAt":"\#(ReaderDigestTests.iso(at))","seconds":120}"#
        }
        try await database.withImportSink { sink in
            var importer = HistoryImporter(sink: sink)
            importer.now = { 1_795_000_000 }
            for (kind, lines) in [(ImportKind.users, userLines), (.articles, articleLines), (.reads, readLines)] {
                let path = dir.path("\(kind.rawValue).jsonl")
                try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
                let report = try await importer.importFile(path, as: kind)
                #expect(report.skipped.isEmpty, "\(kind): \(report)")
            }
        }
    }

    func run(_ database: some DigestDatabase, week: String) async throws -> RunCounters {
        var configuration = WeeklyRunConfiguration(week: try ISOWeek(parsing: week))
        configuration.sendAt = .now
        configuration.allowEmptyWeek = true
        let run = WeeklyRun(database: database, templates: try TemplateCatalog(directory: DigestBinary.templates), configuration: configuration)
        return try await run.run(now: Date(timeIntervalSince1970: 1_795_600_000)).thisRun
    }

    func message(_ database: some DigestDatabase, week: String, user: String) async throws -> (picks: [String], message: String)? {
        guard let row = try await database.outboxRows(week: week, userID: user).first else { return nil }
        let report = try JSONSerialization.jsonObject(with: Data(row.report.utf8)) as! [String: Any]
        return (report["picks"] as? [String] ?? [], row.message)
    }

    static func topics(of id: String) -> [String] {
        ReaderDigestTests.articles.first { $0.id == id }?.topics ?? []
    }

    @Test(arguments: Backend.allCases) func theRunObeysWhatReadersChose(backend: Backend) async throws {
        let dir = try TemporaryDirectory()
        let database = try await ReaderDigestTests().open(backend, in: dir)
        try await Self.importAll(into: database, in: dir)

        var politicsForOthers = 0, followMadeADifference = 0
        for week in ["2026-W45", "2026-W46", "2026-W47"] {
            let counters = try await run(database, week: week)
            let paceWeek = week != "2026-W46"
            // Skipped readers, each by its reason; nobody else.
            var skipped = ["opted_out": 1, "paused": 1]
            if !paceWeek { skipped["not_this_week"] = 1 }
            #expect(counters.skipped == skipped, "\(week)")
            #expect(counters.digested == Self.users.count - skipped.values.reduce(0, +), "\(week)")

            // Muted: politics, one of everyone's two interests, never picked for u-mute (nor any article
            // that has it among others); picked for the others.
            let muted = try #require(try await message(database, week: week, user: "u-mute"), "\(week)")
            #expect(!muted.picks.isEmpty && muted.picks.allSatisfy { !Self.topics(of: $0).contains("politics") }, "\(week): \(muted.picks)")
            let plain = try #require(try await message(database, week: week, user: "u-plain"))
            politicsForOthers += plain.picks.count { Self.topics(of: $0).contains("politics") }
            // Followed: the first pick is on gardening (never read, so never among the interests).
            let followed = try #require(try await message(database, week: week, user: "u-follow"))
            #expect(Self.topics(of: followed.picks[0]).contains("gardening"), "\(week): \(followed.picks)")
            if !Self.topics(of: plain.picks[0]).contains("gardening") { followMadeADifference += 1 }
            // The pace: a digest in W45 and W47, covering two weeks; none in W46.
            let paced = try await message(database, week: week, user: "u-pace")
            if paceWeek {
                let paced = try #require(paced, "\(week)")
                #expect(paced.message.contains("In these 2 weeks: "), "\(week): \(paced.message)")
                #expect(!plain.message.contains("In these"), "\(week)")
            } else {
                #expect(paced == nil, "\(week)")
            }
            // The pause holds through the due date; a pause that ended the day before holds nothing.
            #expect(try await message(database, week: week, user: "u-pause") == nil, "\(week)")
            #expect(try await message(database, week: week, user: "u-pause-over") != nil, "\(week)")
            #expect(try await message(database, week: week, user: "u-off") == nil, "\(week)")
        }
        #expect(politicsForOthers > 0, "politics is picked for readers who did not mute it")
        #expect(followMadeADifference > 0, "without following it, gardening does not come first")
        await database.close()
    }
}
