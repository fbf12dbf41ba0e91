import Testing

@testable import DigestCore

@Suite("Reading time shown")
struct ReadingTimeTests {
    /// "1 article, 0 min": seconds of reading round to 0 minutes, and a week with a read shows 1.
    @Test(arguments: [
        (1, 0, 1), (3, 0, 1), (1, 1, 1), (2, 7, 7), (0, 0, 0),
    ] as [(Int, Int, Int)])
    func aWeekWithAReadShowsAtLeastOneMinute(articles: Int, minutes: Int, shown: Int) throws {
        #expect(DigestViewModel.shownMinutes(articles: articles, minutes: minutes) == shown)
        let en = DigestViewModel(
            weekDigest(articles: articles, minutes: minutes, days: 1, locale: "en"),
            templates: shippedCatalog.localized(for: "en"))
        #expect(en.minutesCount == shown)
        #expect(en.minutes == "\(shown) min")
    }

    @Test func aFewSecondsOfReadingPlanAsOneMinute() throws {
        let reader = Reader(id: "u1", locale: "ru", timeZone: "Europe/Warsaw", optedOut: false, devices: [])
        let stats = WeeklyStats(
            articlesRead: 1, minutesRead: 0, activeDays: 1, topTopic: nil, previousArticlesRead: 0, previousMinutesRead: 0)
        let digest = WeeklyDigest(
            reader: reader, window: PlanFixture.window, stats: stats, picks: PlanFixture.articles(["Статья"]))
        let plan = try VariantPlanner().plan(
            digest, templates: shippedCatalog.localized(for: "ru"), image: nil, platforms: [.android])
        #expect(plan.title == "Ваша неделя: 1 статья, 1 минута")
        #expect(plan.body == "Вы прочитали 1 статью за 1 минуту. Дальше: Статья")
    }

    /// Through the builder: a read of 20 seconds is 1 minute in the stats and in the text.
    @Test func aTwentySecondReadShowsOneMinute() throws {
        let window = PlanFixture.window
        let reader = Reader(id: "u1", locale: "pl-PL", timeZone: "Europe/Warsaw", optedOut: false, devices: [])
        let reads = [ReadEvent(articleID: "a9", topics: ["swift"], readAt: window.start + 3600, seconds: 20)]
        let digest = DigestBuilder(pool: CandidatePool(articles: PlanFixture.articles(["Pick"]))).build(
            reader: reader, window: window, history: ReaderHistory(reads: reads))
        #expect(digest.stats.articlesRead == 1 && digest.stats.minutesRead == 1)
        let plan = try VariantPlanner().plan(
            digest, templates: shippedCatalog.localized(for: "pl-PL"), image: nil, platforms: [.android])
        #expect(plan.title == "Twój tydzień: 1 artykuł, 1 minuta")
    }
}
