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
