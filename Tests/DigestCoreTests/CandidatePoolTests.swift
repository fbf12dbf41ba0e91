import Foundation
import Testing

@testable import DigestCore

private func article(_ id: String, _ topics: [String], at publishedAt: Int64) -> Article {
    Article(id: id, title: "Title \(id)", url: "https://news.example/\(id)", imageURL: nil, topics: topics,
        publishedAt: publishedAt, readingMinutes: 4)
}

@Suite("CandidatePool")
struct CandidatePoolTests {
    static let t: Int64 = 1_795_392_000  // 2026-11-23T00:00Z
    static let hour: Int64 = 3600

    @Test func ranksByTopicOverlapThenRecency() {
        let pool = CandidatePool(articles: [
            article("a1", ["swift", "ios"], at: Self.t - 1 * Self.hour),
            article("a2", ["swift"], at: Self.t - 2 * Self.hour),
            article("a3", ["rust"], at: Self.t - Self.hour / 2),
            article("a4", ["swift", "ios", "server"], at: Self.t - 3 * Self.hour),
            article("a5", ["ios"], at: Self.t - 10 * Self.hour),
        ])
        let picks = pool.pick(limit: 5, publishedFrom: 0, until: Self.t, topics: ["swift", "ios"], excluding: [])
        #expect(picks.map(\.id) == ["a1", "a4", "a2", "a5", "a3"])
        let noTopics = pool.pick(limit: 5, publishedFrom: 0, until: Self.t, topics: [String](), excluding: [])
        #expect(noTopics.map(\.id) == ["a3", "a1", "a2", "a4", "a5"])
    }

    @Test func equalTimesBreakTiesById() {
        let pool = CandidatePool(articles: [article("b", ["x"], at: Self.t - 5), article("a", ["x"], at: Self.t - 5)])
        #expect(pool.articles.map(\.id) == ["a", "b"])
        #expect(pool.pick(limit: 1, publishedFrom: 0, until: Self.t, topics: ["x"], excluding: []).map(\.id) == ["a"])
    }

    @Test func excludesReadArticles() {
        let pool = CandidatePool(articles: (1...4).map { article("a\($0)", ["swift"], at: Self.t - Int64($0) * Self.hour) })
        let picks = pool.pick(limit: 5, publishedFrom: 0, until: Self.t, topics: ["swift"], excluding: ["a1", "a3"])
        #expect(picks.map(\.id) == ["a2", "a4"])
    }

    @Test func windowIsHalfOpen() {
        let from = Self.t - 14 * 86_400
        let pool = CandidatePool(articles: [
            article("at-from", [], at: from), article("before", [], at: from - 1),
            article("at-until", [], at: Self.t), article("inside", [], at: Self.t - 1),
            article("best-but-late", ["swift", "ios"], at: Self.t + Self.hour),
        ])
        let picks = pool.pick(limit: 5, publishedFrom: from, until: Self.t, topics: ["swift", "ios"], excluding: [])
        #expect(picks.map(\.id) == ["inside", "at-from"])
    }

    @Test(arguments: [0, 1, 5])
    func atMostTheLimit(limit: Int) {
        let pool = CandidatePool(articles: (1...8).map { article("a\($0)", ["swift"], at: Self.t - Int64($0)) })
        let picks = pool.pick(limit: limit, publishedFrom: 0, until: Self.t, topics: ["swift"], excluding: [])
        #expect(picks.map(\.id) == (0..<limit).map { "a\($0 + 1)" })
        #expect(CandidatePool(articles: []).pick(limit: limit, publishedFrom: 0, until: Self.t, topics: ["x"], excluding: []).isEmpty)
    }

    /// Sizes around the 64-article words of the topic bit sets.
    @Test(arguments: [300, 128, 64, 65, 1]) func matchesABruteForceReference(count: Int) {
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        let allTopics = ["swift", "ios", "rust", "go", "web", "ml"]
        let articles = (0..<count).map { i in
            article("x\(i)", (0..<next(4)).map { _ in allTopics[next(allTopics.count)] }, at: Self.t - Int64(next(40) * 3600 * 12))
        }
        let pool = CandidatePool(articles: articles)
        for round in 0..<25 {
            let topics = Set((0..<(round % 6)).map { _ in allTopics[next(allTopics.count)] })
            let exclude = Set((0..<(count / 10)).map { _ in "x\(next(count))" })
            let from = Self.t - 14 * 86_400
            let until = Self.t - Int64(next(3)) * 86_400
            let expected = articles
                .filter { $0.publishedAt >= from && $0.publishedAt < until && !exclude.contains($0.id) }
                .map { (article: $0, overlap: Set($0.topics).intersection(topics).count) }
                .sorted {
                    if $0.overlap != $1.overlap { return $0.overlap > $1.overlap }
                    if $0.article.publishedAt != $1.article.publishedAt { return $0.article.publishedAt > $1.article.publishedAt }
                    return $0.article.id < $1.article.id
                }
                .prefix(5).map(\.article.id)
            let picks = pool.pick(limit: 5, publishedFrom: from, until: until, topics: topics, excluding: exclude)
            #expect(picks.map(\.id) == Array(expected), "round \(round)")
        }
    }
}

extension CandidatePoolTests {
    @Test func languagesCompareByPrimarySubtagAndUnlabelledArticlesSuitEveryone() {
        func article(_ id: String, _ language: String?, at hoursAgo: Int64) -> Article {
            Article(id: id, title: id, url: "https://news.example/\(id)", imageURL: nil, topics: ["x"],
                publishedAt: Self.t - hoursAgo * Self.hour, readingMinutes: 3, language: language)
        }
        let pool = CandidatePool(articles: [
            article("pl", "pl-PL", at: 1), article("zh", "zh-Hans", at: 2), article("none", nil, at: 3),
            article("en", "en", at: 4), article("bad", "1x", at: 5),
        ])
        func picks(_ languages: Set<String>?) -> [String] {
            pool.pick(limit: 5, publishedFrom: 0, until: Self.t, weights: ["x": 1], languages: languages, excluding: []).map(\.id)
        }
        #expect(picks(["zh"]) == ["zh", "none", "bad"])  // an unreadable tag counts as none
        #expect(picks(["en", "pl"]) == ["pl", "none", "en", "bad"])
        #expect(picks([]) == ["none", "bad"])
        #expect(picks(nil) == ["pl", "zh", "none", "en", "bad"])
        #expect(LanguageTag.primary("zh-Hans") == "zh" && LanguageTag.primary("pt_BR") == "pt" && LanguageTag.primary("und") == nil)
        #expect(LanguageTag.isWellFormed("zh-Hans-CN") && !LanguageTag.isWellFormed("../etc") && !LanguageTag.isWellFormed("e"))
    }

    /// Weighted scores and languages against a sort of every candidate, around the 64-article words.
    @Test(arguments: [3000, 300, 129, 64, 1]) func weightedPicksMatchABruteForceReference(count: Int) {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        let allTopics = ["swift", "ios", "rust", "go", "web", "ml"]
        let allLanguages: [String?] = ["en", "pl", "ru-RU", "zh-Hans", nil]
        let articles = (0..<count).map { i in
            Article(
                id: "x\(i)", title: "t", url: "https://news.example/\(i)", imageURL: nil,
                topics: (0..<next(4)).map { _ in allTopics[next(allTopics.count)] },
                publishedAt: Self.t - Int64(next(40) * 3600 * 12), readingMinutes: 3,
                language: allLanguages[next(allLanguages.count)])
        }
        let pool = CandidatePool(articles: articles)
        for round in 0..<40 {
            var weights: [String: Int] = [:]
            for _ in 0..<(round % 5) { weights[allTopics[next(allTopics.count)]] = [1, 2, 4, 8, 3][next(5)] }
            let languages: Set<String>? = round % 7 == 0 ? nil : Set((0..<(round % 3)).map { _ in ["en", "pl", "ru", "zh"][next(4)] })
            let exclude = Set((0..<(count / 10)).map { _ in "x\(next(count))" })
            let from = Self.t - 14 * 86_400
            let until = Self.t - Int64(next(3)) * 86_400
            let expected = articles
                .filter { article in
                    article.publishedAt >= from && article.publishedAt < until && !exclude.contains(article.id)
                        && (languages == nil || article.language.flatMap(LanguageTag.primary).map { languages!.contains($0) } ?? true)
                }
                .map { (article: $0, score: Set($0.topics).reduce(0) { $0 + (weights[$1] ?? 0) }) }
                .sorted {
                    if $0.score != $1.score { return $0.score > $1.score }
                    if $0.article.publishedAt != $1.article.publishedAt { return $0.article.publishedAt > $1.article.publishedAt }
                    return $0.article.id < $1.article.id
                }
                .prefix(5).map(\.article.id)
            let picks = pool.pick(limit: 5, publishedFrom: from, until: until, weights: weights, languages: languages, excluding: exclude)
            #expect(picks.map(\.id) == Array(expected), "round \(round)")
        }
    }
}

@Suite("DigestBuilder")
struct DigestBuilderTests {
    // Pacific/Kiritimati (+14) 2026-W47: Monday 2026-11-16 00:00 local is 1794736800 (date -d, tzdata).
    static let window = WeekCalendar(week: ISOWeek(year: 2026, week: 47)!).window(forZone: "Pacific/Kiritimati").window
    static let reader = Reader(id: "u1", locale: "en", timeZone: "Pacific/Kiritimati", optedOut: false,
        devices: [Device(token: "tok", platform: .android)])
    static let hour: Int64 = 3600
    static let day: Int64 = 86_400

    static func read(_ id: String, _ topics: [String], at instant: Int64, seconds: Int) -> ReadEvent {
        ReadEvent(articleID: id, topics: topics, readAt: instant, seconds: seconds)
    }

    @Test func statsInTheUsersZone() {
        let start: Int64 = 1_794_736_800
        #expect(Self.window.start == start)
        let end = Self.window.end
        let reads = [
            Self.read("a1", ["swift"], at: start + 1 * Self.hour, seconds: 300),  // Mon 01:00 local = Sun 11:00Z
            Self.read("a1", ["swift"], at: start + 23 * Self.hour, seconds: 100),  // Mon 23:00 local = Mon 09:00Z
            Self.read("a2", ["ios"], at: start + 2 * Self.day + 5 * Self.hour, seconds: 61),  // Wed
            Self.read("a3", ["ios"], at: end - 1, seconds: 29),  // Sun 23:59:59 local
            Self.read("p1", ["rust"], at: Self.window.previousStart + 10 * Self.hour, seconds: 600),  // previous week
            Self.read("p2", ["rust"], at: start - 1, seconds: 30),  // previous week's last second
            Self.read("late", ["swift"], at: end, seconds: 999),  // after the week
            Self.read("old", ["go"], at: Self.window.previousStart - 1, seconds: 999),  // before both weeks
        ]
        let digest = DigestBuilder(pool: CandidatePool(articles: [])).build(reader: Self.reader, window: Self.window, history: ReaderHistory(reads: reads))
        let stats = digest.stats
        #expect(stats.articlesRead == 3)
        #expect(stats.minutesRead == 8)  // 490 s
        #expect(stats.activeDays == 3)  // Mon, Wed, Sun local (UTC would see four dates)
        #expect(stats.topTopic == "ios")  // swift 2, ios 2: alphabetical
        #expect(stats.previousArticlesRead == 2)
        #expect(stats.previousMinutesRead == 11)  // 630 s = 10.5 min, rounded up
        #expect(stats.minutesChangePercent == -27)  // (8 − 11) / 11 = −27.3%
        #expect(digest.digestID == "2026-W47:u1")
        #expect(!digest.isReengagement)
    }

    @Test(arguments: [(0, 0), (29, 0), (30, 1), (89, 1), (90, 2), (3599, 60)])
    func minutesRoundToNearest(seconds: Int, minutes: Int) {
        #expect(DigestBuilder.minutes(seconds, articles: 0) == minutes)
        // Anything read shows as at least a minute.
        #expect(DigestBuilder.minutes(seconds, articles: 1) == max(1, minutes))
    }

    @Test func picksAreFreshUnreadAndRanked() {
        let end = Self.window.end
        let pool = CandidatePool(articles: [
            article("a1", ["swift"], at: end - 3 * Self.day),  // read this week
            article("late", ["swift"], at: end - 4 * Self.day),  // read after the week
            article("old", ["swift"], at: end - 5 * Self.day),  // read before both weeks
            article("ios-new", ["ios"], at: end - 2 * Self.day),
            article("swift-new", ["swift"], at: end - 1 * Self.day),
            article("rust", ["rust"], at: end - 3 * Self.hour),
            article("stale", ["swift"], at: end - 14 * Self.day - 1),
            article("edge", ["ios"], at: end - 14 * Self.day),
            article("future", ["swift", "ios"], at: end),
        ])
        let reads = [
            Self.read("a1", ["swift"], at: Self.window.start + Self.hour, seconds: 60),
            Self.read("x", ["ios"], at: Self.window.start + 2 * Self.hour, seconds: 60),
            Self.read("late", ["swift"], at: end + Self.day, seconds: 60),
            Self.read("old", ["swift"], at: Self.window.previousStart - Self.day, seconds: 60),
        ]
        let digest = DigestBuilder(pool: pool).build(reader: Self.reader, window: Self.window, history: ReaderHistory(reads: reads))
        #expect(digest.picks.map(\.id) == ["swift-new", "ios-new", "edge", "rust"])
    }

    @Test func interestsWeighTheWeekMostAndLanguagesComeFromLocaleAndReads() {
        let end = Self.window.end
        func fresh(_ id: String, _ topics: [String], _ language: String?, hoursAgo: Int64) -> Article {
            Article(id: id, title: id, url: "https://news.example/\(id)", imageURL: nil, topics: topics,
                publishedAt: end - hoursAgo * Self.hour, readingMinutes: 3, language: language)
        }
        let pool = CandidatePool(articles: [
            fresh("rust-en", ["rust"], "en", hoursAgo: 1), fresh("swift-en", ["swift"], "en", hoursAgo: 2),
            fresh("swift-de", ["swift"], "de", hoursAgo: 1), fresh("swift-ru", ["swift"], "ru", hoursAgo: 3),
            fresh("go-none", ["go"], nil, hoursAgo: 1), fresh("picked", ["swift"], "en", hoursAgo: 1),
            fresh("republished", ["swift"], "en", hoursAgo: 1),
        ])
        let week: Int64 = 7 * Self.day
        let reads = [
            // Three weeks before: rust three times (1 each); two weeks before: a Russian article (2).
            Self.read("r1", ["rust"], at: Self.window.start - 3 * week + Self.hour, seconds: 60),
            Self.read("r2", ["rust"], at: Self.window.start - 3 * week + 2 * Self.hour, seconds: 60),
            Self.read("r3", ["rust"], at: Self.window.start - 3 * week + 3 * Self.hour, seconds: 60),
            ReadEvent(articleID: "ru1", topics: ["news"], readAt: Self.window.start - 2 * week + Self.hour, seconds: 60, language: "ru"),
            // Four weeks before: outside the interests and languages.
            ReadEvent(articleID: "old", topics: ["go"], readAt: Self.window.start - 4 * week + Self.hour, seconds: 60, language: "de"),
            // This week: swift once (8).
            Self.read("s1", ["swift"], at: Self.window.start + Self.hour, seconds: 60),
        ]
        let history = ReaderHistory(reads: reads, readEarlier: ["republished"], recentPicks: ["picked"])
        let digest = DigestBuilder(pool: pool).build(reader: Self.reader, window: Self.window, history: history)
        // en (locale) and ru (read two weeks ago); not de (read four weeks ago); swift (8) before rust (3).
        #expect(digest.picks.map(\.id) == ["swift-en", "swift-ru", "rust-en", "go-none"])
        let builder = DigestBuilder(pool: pool)
        #expect(!builder.isDormant(window: Self.window, reads: Array(reads.prefix(3))))
        #expect(builder.isDormant(window: Self.window, reads: [reads[4]]))
        #expect(builder.isDormant(window: Self.window, reads: []))
        var never = DigestBuilder.Configuration()
        never.dormantAfterWeeks = 0
        #expect(!DigestBuilder(pool: pool, configuration: never).isDormant(window: Self.window, reads: []))
    }

    /// A heavy reader (hundreds of reads, more distinct articles and topics than the builder counts
    /// without hashing) gets the stats and picks a plain reference computes.
    @Test(arguments: [5, 40, 400]) func heavyReadersMatchAPlainReference(readCount: Int) {
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        let topics = (0..<60).map { "topic\($0)" }
        let end = Self.window.end
        let pool = CandidatePool(
            articles: (0..<200).map { i in
                Article(
                    id: "c\(i)", title: "t", url: "https://news.example/c\(i)", imageURL: nil,
                    topics: (0..<(1 + next(3))).map { _ in topics[next(topics.count)] }, publishedAt: end - Int64(1 + next(300)) * Self.hour,
                    readingMinutes: 3, language: ["en", "pl", nil][next(3)])
            })
        let week: Int64 = 7 * Self.day
        let reads = (0..<readCount).map { _ in
            // Articles of the pool and others, over the four weeks of interests and the week after.
            ReadEvent(
                articleID: next(2) == 0 ? "c\(next(200))" : "o\(next(300))", topics: (0..<next(3)).map { _ in topics[next(topics.count)] },
                readAt: Self.window.start - 3 * week + Int64(next(Int(5 * week))), seconds: next(400))
        }.sorted { $0.readAt < $1.readAt }
        let digest = DigestBuilder(pool: pool).build(reader: Self.reader, window: Self.window, history: ReaderHistory(reads: reads))

        let inWeek = reads.filter { $0.readAt >= Self.window.start && $0.readAt < end }
        let inPrevious = reads.filter { $0.readAt >= Self.window.previousStart && $0.readAt < Self.window.start }
        var weekTopics: [String: Int] = [:]
        for read in inWeek { for topic in read.topics { weekTopics[topic, default: 0] += 1 } }
        var weights: [String: Int] = [:]
        for read in reads where read.readAt < end {
            let weeksBefore = Int((Self.window.start + week - 1 - read.readAt) / week)
            for topic in read.topics { weights[topic, default: 0] += [8, 4, 2, 1][max(0, weeksBefore)] }
        }
        #expect(digest.stats.articlesRead == Set(inWeek.map(\.articleID)).count)
        #expect(digest.stats.previousArticlesRead == Set(inPrevious.map(\.articleID)).count)
        #expect(digest.stats.topTopic == weekTopics.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key)
        let expected = pool.pick(
            limit: 5, publishedFrom: end - 14 * Self.day, until: end, weights: weights, languages: ["en"],
            excluding: Set(reads.map(\.articleID)))
        #expect(digest.picks.map(\.id) == expected.map(\.id))
        #expect(!digest.picks.isEmpty)
    }

    @Test func idleUserIsRankedOnThePreviousWeekAndCappedAtFive() {
        let end = Self.window.end
        let pool = CandidatePool(articles: (1...8).map { article("r\($0)", ["rust"], at: end - Int64($0) * Self.hour) }
            + [article("swift", ["swift"], at: end - 1)])
        let reads = [Self.read("p1", ["rust"], at: Self.window.previousStart + Self.hour, seconds: 120)]
        let digest = DigestBuilder(pool: pool).build(reader: Self.reader, window: Self.window, history: ReaderHistory(reads: reads))
        #expect(digest.isReengagement)
        #expect(digest.stats.activeDays == 0 && digest.stats.topTopic == nil)
        #expect(digest.picks.map(\.id) == ["r1", "r2", "r3", "r4", "r5"])
    }
}
