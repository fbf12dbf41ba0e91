import Foundation
import Testing

@testable import DigestCore

/// What the run does with a reader's preferences (issue 41, "The run obeys them"), through the
/// composer at a fixed instant: mute, follow, the pace (the weeks with and without a digest, the
/// span its stats and picks cover, the texts in four locales), the pause's edges, and every skip
/// counted.
@Suite("Reader preferences in the run")
struct ReaderPreferencesRunTests {
    static let week = ISOWeek(year: 2026, week: 47)!
    /// 2026-11-16T00:00Z, the Monday of 2026-W47.
    static let monday: Int64 = 1_794_787_200
    static let day: Int64 = 86_400
    /// 2026-11-23T06:00Z: the week has ended in UTC, three hours before the Monday 09:00 delivery.
    static let now: Int64 = monday + 7 * day + 6 * 3600

    /// Every image ready: the Image variant's picture is the top pick's.
    struct ReadyImages: AttachmentProvider {
        func renditions(forImageAt url: String) async -> ImageOutcome {
            .ready(ImageRenditions(hero: Rendition(url: url + "#hero", mimeType: "image/jpeg", width: 1024, height: 512, byteCount: 1000), icon: nil))
        }
    }

    static func article(_ id: String, _ topic: String, daysBeforeEnd: Double, language: String? = "en") -> Article {
        Article(
            id: id, title: "Article \(id)", url: "https://news.example/\(id)", imageURL: "https://img.example/\(id).jpg",
            topics: [topic], publishedAt: monday + 7 * day - Int64(daysBeforeEnd * Double(day)), readingMinutes: 4,
            language: language)
    }

    /// Six Swift articles, the newest first, a sports one newer than all, science ones older, one
    /// science article in German, and one Swift article three weeks old.
    static let articles: [Article] = [
        article("sports-1", "sports", daysBeforeEnd: 0.5),
        article("swift-1", "swift", daysBeforeEnd: 1),
        article("swift-2", "swift", daysBeforeEnd: 2),
        article("swift-3", "swift", daysBeforeEnd: 3),
        article("swift-4", "swift", daysBeforeEnd: 4),
        article("swift-5", "swift", daysBeforeEnd: 5),
        article("swift-6", "swift", daysBeforeEnd: 6),
        article("science-1", "science", daysBeforeEnd: 9),
        article("science-de", "science", daysBeforeEnd: 1.5, language: "de"),
        article("swift-old", "swift", daysBeforeEnd: 20),
    ]

    static func composer(week: ISOWeek = week, now: Int64 = now, articles: [Article] = articles, attachments: any AttachmentProvider = NoAttachments())
        -> BatchComposer
    {
        BatchComposer(
            configuration: .init(week: week), articles: articles, templates: shippedCatalog, attachments: attachments, now: now)
    }

    static func reader(_ preferences: ReaderPreferences = .init(), id: String = "u1", zone: String = "UTC", locale: String = "en") -> Reader {
        var reader = Reader(id: id, locale: locale, timeZone: zone, optedOut: false, devices: [Device(token: "tok-\(id)", platform: .android)])
        reader.preferences = preferences
        return reader
    }

    /// A read of a Swift (or `topic`) article at noon UTC, `days` after the week's Monday (negative:
    /// the weeks before).
    static func read(_ id: String, day days: Int, topic: String = "swift", seconds: Int = 300) -> ReadEvent {
        ReadEvent(articleID: id, topics: [topic], readAt: monday + Int64(days) * day + 12 * 3600, seconds: seconds, language: "en")
    }

    /// Swift reads in the week and sports reads before it: sports outweighs nothing in the week.
    static let history = ReaderHistory(reads: [
        read("r-prev", day: -3, topic: "sports"), read("r1", day: 1), read("r2", day: 3), read("r3", day: 3),
    ])

    static func picks(_ user: ComposedUser) -> [String] { user.plan?.picks ?? [] }

    // MARK: mute

    @Test func aMutedTopicIsNeverPicked() async throws {
        let sportsFan = ReaderHistory(reads: [Self.read("s1", day: 1, topic: "sports"), Self.read("s2", day: 2, topic: "sports")])
        let plain = await Self.composer().composeUser(Self.reader(), history: sportsFan)
        #expect(Self.picks(plain).first == "sports-1")
        let muted = await Self.composer().composeUser(Self.reader(.init(mute: ["sports"])), history: sportsFan)
        #expect(Self.picks(muted) == ["swift-1", "swift-2", "swift-3", "swift-4", "swift-5"])
        // Compared exactly: another case is another topic.
        let other = await Self.composer().composeUser(Self.reader(.init(mute: ["Sports"])), history: sportsFan)
        #expect(Self.picks(other).first == "sports-1")
    }

    /// The Image variant's picture is the top pick's: never a muted article's.
    @Test func theImageVariantNeverShowsAMutedArticle() async throws {
        let composer = Self.composer(attachments: ReadyImages())
        let sportsFan = ReaderHistory(reads: [Self.read("s1", day: 1, topic: "sports"), Self.read("s2", day: 2, topic: "sports")])
        let plain = await composer.composeUser(Self.reader(), history: sportsFan)
        #expect(plain.plan?.variant == .image)
        #expect(plain.plan?.image?.hero.url == "https://img.example/sports-1.jpg#hero")
        let muted = await composer.composeUser(Self.reader(.init(mute: ["sports"])), history: sportsFan)
        #expect(muted.plan?.variant == .image)
        #expect(muted.plan?.image?.hero.url == "https://img.example/swift-1.jpg#hero")
        #expect(muted.plan?.topPickURL == "https://news.example/swift-1")
    }

    // MARK: follow

    @Test func theFirstPickIsFromAFollowedTopicWhenOneIsEligible() async throws {
        let plain = await Self.composer().composeUser(Self.reader(), history: Self.history)
        #expect(Self.picks(plain) == ["swift-1", "swift-2", "swift-3", "swift-4", "swift-5"])
        let follower = await Self.composer().composeUser(Self.reader(.init(follow: ["science"])), history: Self.history)
        // science-1 (English, in the fortnight) first, the rest as without the follow; the German one
        // is in no language of theirs.
        #expect(Self.picks(follower) == ["science-1", "swift-1", "swift-2", "swift-3", "swift-4"])
        // A followed topic already first changes nothing.
        let already = await Self.composer().composeUser(Self.reader(.init(follow: ["swift"])), history: Self.history)
        #expect(Self.picks(already) == Self.picks(plain))
    }

    @Test func aFollowWithNothingEligibleLeavesThePicksAsTheyAre() async throws {
        let plain = await Self.composer().composeUser(Self.reader(), history: Self.history)
        // Read already, or recently picked: not eligible.
        var read = Self.history
        read.reads.append(Self.read("science-1", day: 4, topic: "science"))
        let readIt = await Self.composer().composeUser(Self.reader(.init(follow: ["science"])), history: read)
        #expect(!Self.picks(readIt).contains("science-1") && Self.picks(readIt).first == "swift-1")
        var picked = Self.history
        picked.recentPicks = ["science-1"]
        let pickedBefore = await Self.composer().composeUser(Self.reader(.init(follow: ["science"])), history: picked)
        #expect(Self.picks(pickedBefore) == Self.picks(plain))
        // A topic no article carries, and one both followed and muted (muted wins).
        let unknown = await Self.composer().composeUser(Self.reader(.init(follow: ["gardening"])), history: Self.history)
        #expect(Self.picks(unknown) == Self.picks(plain))
        let both = await Self.composer().composeUser(Self.reader(.init(follow: ["science"], mute: ["science"])), history: Self.history)
        #expect(Self.picks(both) == Self.picks(plain))
        // Out of the window: the old science article is 9 days old, inside the fortnight; with a
        // freshness of a week it is not eligible.
        var configuration = BatchComposer.Configuration(week: Self.week)
        configuration.digest.freshnessSeconds = 7 * Self.day
        let fresh = BatchComposer(
            configuration: configuration, articles: Self.articles, templates: shippedCatalog, attachments: NoAttachments(), now: Self.now)
        let weekOnly = await fresh.composeUser(Self.reader(.init(follow: ["science"])), history: Self.history)
        #expect(Self.picks(weekOnly) == Self.picks(plain))
    }

    /// What the previews show beside the picks: the best candidates the preferences kept out.
    @Test func thePreviewsSayWhatThePreferencesLeftOut() async throws {
        let composer = Self.composer()
        let sportsFan = ReaderHistory(reads: [Self.read("s1", day: 1, topic: "sports"), Self.read("s2", day: 2, topic: "sports")])
        let muted = await composer.composeUser(Self.reader(.init(mute: ["sports"])), history: sportsFan)
        #expect(composer.leftOut(muted, history: sportsFan) == [LeftOutCandidate(id: "sports-1", title: "Article sports-1", reason: "muted: sports")])
        let follower = await composer.composeUser(Self.reader(.init(follow: ["science"])), history: Self.history)
        #expect(
            composer.leftOut(follower, history: Self.history)
                == [LeftOutCandidate(id: "swift-5", title: "Article swift-5", reason: "followed first: science")])
        let plain = await composer.composeUser(Self.reader(), history: Self.history)
        #expect(composer.leftOut(plain, history: Self.history).isEmpty)
    }

    /// The followed topics' best article, scored alone, is the first of them in the full ranking
    /// (the same weights, window, languages, mutes and exclusions), on 300 random pools and readers.
    @Test func theFollowedPickIsTheFirstOfItsTopicsInTheRanking() {
        var random = SplitMix64(seed: 7)
        let topics = (0..<12).map { "t\($0)" }
        for round in 0..<300 {
            let articles = (0..<(20 + random.next(below: 200))).map { index in
                Article(
                    id: "a\(index)", title: "A\(index)", url: "https://news.example/\(index)", imageURL: nil,
                    topics: (0..<(1 + random.next(below: 3))).map { _ in topics[random.next(below: topics.count)] },
                    publishedAt: Self.monday + Int64(random.next(below: 20 * 86_400)) - 6 * Self.day, readingMinutes: 3,
                    language: ["en", "pl", nil][random.next(below: 3)])
            }
            let pool = CandidatePool(articles: articles)
            let weights = (0..<random.next(below: 6)).map { _ in (topic: topics[random.next(below: topics.count)], weight: 1 + random.next(below: 9)) }
            var unique: [(topic: String, weight: Int)] = []
            for entry in weights where !unique.contains(where: { $0.topic == entry.topic }) { unique.append(entry) }
            let muted = random.next(below: 2) == 0 ? [] : [topics[random.next(below: topics.count)]]
            let within = (0..<(1 + random.next(below: 2))).map { _ in topics[random.next(below: topics.count)] }
            let languages: [String]? = random.next(below: 3) == 0 ? nil : ["en"]
            let excluded = Set((0..<random.next(below: 10)).map { _ in "a\(random.next(below: articles.count))" })
            let from = Self.monday + 7 * Self.day - 14 * Self.day, until = Self.monday + 7 * Self.day
            let ranking = pool.pick(
                limit: articles.count, publishedFrom: from, until: until, weights: unique, languages: languages, muted: muted
            ) { excluded.contains($0) }
            let expected = ranking.first { $0.topics.contains { within.contains($0) } }
            let best = pool.best(
                publishedFrom: from, until: until, weights: unique, languages: languages, muted: muted, within: within
            ) { excluded.contains($0) }
            #expect(best?.id == expected?.id, "round \(round)")
        }
    }

    // MARK: every

    @Test func aPaceHasADigestOnlyInItsWeeks() throws {
        let from45 = ReaderPreferences(every: 2, from: ISOWeek(year: 2026, week: 45)!)
        #expect(from45.isDue(in: Self.week))
        #expect(!from45.isDue(in: ISOWeek(year: 2026, week: 46)!))
        // Weeks before `from` count too (negative differences), and across a year's end.
        let from49 = ReaderPreferences(every: 2, from: ISOWeek(year: 2026, week: 49)!)
        #expect(from49.isDue(in: Self.week))
        #expect(!from49.isDue(in: ISOWeek(year: 2026, week: 48)!))
        let monthly = ReaderPreferences(every: 4, from: ISOWeek(year: 2026, week: 51)!)
        #expect(monthly.isDue(in: ISOWeek(year: 2027, week: 2)!))  // 2026 has 53 weeks: W51 + 4 = 2027-W02
        #expect(!monthly.isDue(in: ISOWeek(year: 2027, week: 1)!))
        #expect(monthly.isDue(in: Self.week))
    }

    @Test func aReaderOutOfTheirWeekIsSkippedAndNeedsNoReads() async throws {
        let composer = Self.composer()
        let notDue = Self.reader(.init(every: 2, from: ISOWeek(year: 2026, week: 46)!), id: "p")
        #expect(composer.readsSince(notDue) == Int64.max)
        let user = await composer.composeUser(notDue, history: Self.history)
        #expect(user.skipped == .notThisWeek && user.messages.isEmpty && user.plan == nil)
    }

    /// A digest of N weeks needs the N weeks before them and interests over 4 × N weeks.
    @Test func readsReachBackAsFarAsThePaceNeeds() {
        let composer = Self.composer()
        let start = Self.monday
        #expect(composer.readsSince(Self.reader()) == start - 3 * 7 * Self.day)
        #expect(composer.readsSince(Self.reader(.init(every: 2, from: Self.week))) == start - 7 * 7 * Self.day)
        #expect(composer.readsSince(Self.reader(.init(every: 4, from: Self.week))) == start - 15 * 7 * Self.day)
        // In a zone with a daylight-saving change between, at least the local Monday of the span.
        let warsaw = Self.reader(.init(every: 4, from: Self.week), zone: "Europe/Warsaw")
        let span = composer.calendar.span(forZone: "Europe/Warsaw", weeks: 4)
        #expect(composer.readsSince(warsaw) <= span.previousStart)
        #expect(span.dayStarts.count == 57 && span.end == composer.calendar.window(forZone: "Europe/Warsaw").window.end)
    }

    /// Stats over the last two weeks, compared with the two before; interests and picks over them.
    @Test func aFortnightlyDigestCoversTwoWeeks() async throws {
        let reads = ReaderHistory(reads: [
            Self.read("p1", day: -20, seconds: 600), Self.read("p2", day: -9, seconds: 600),  // W44, W45
            Self.read("c1", day: -6, seconds: 900), Self.read("c2", day: -6, seconds: 300),  // W46
            Self.read("c3", day: 2, seconds: 600), Self.read("c4", day: 5, seconds: 600),  // W47
        ])
        let composer = Self.composer()
        let window = composer.calendar.window(forZone: "UTC").window
        let weekly = composer.builder.build(reader: Self.reader(), window: window, history: reads)
        #expect(weekly.coveredWeeks == 1)
        #expect(weekly.stats == WeeklyStats(articlesRead: 2, minutesRead: 20, activeDays: 2, topTopic: "swift", previousArticlesRead: 2, previousMinutesRead: 20))
        let fortnightly = Self.reader(.init(every: 2, from: Self.week))
        let two = composer.builder.build(
            reader: fortnightly, window: window, history: reads, span: composer.span(for: fortnightly))
        #expect(two.coveredWeeks == 2)
        #expect(two.stats == WeeklyStats(articlesRead: 4, minutesRead: 40, activeDays: 3, topTopic: "swift", previousArticlesRead: 2, previousMinutesRead: 20))
        #expect(two.stats.minutesChangePercent == 100)
        // The three-week-old Swift article: only a monthly digest's picks reach it.
        let monthly = Self.reader(.init(every: 4, from: Self.week))
        let four = composer.builder.build(reader: monthly, window: window, history: ReaderHistory(reads: []), span: composer.span(for: monthly))
        #expect(four.coveredWeeks == 4)
        var everything = DigestBuilder.Configuration()
        everything.maxPicks = 20
        let builder = DigestBuilder(pool: composer.builder.pool, configuration: everything)
        #expect(builder.build(reader: monthly, window: window, history: ReaderHistory(reads: []), span: composer.span(for: monthly)).picks.map(\.id).contains("swift-old"))
        #expect(!builder.build(reader: Self.reader(), window: window, history: ReaderHistory(reads: [])).picks.map(\.id).contains("swift-old"))
        #expect(!builder.build(reader: fortnightly, window: window, history: ReaderHistory(reads: []), span: composer.span(for: fortnightly)).picks.map(\.id).contains("swift-old"))
    }

    /// The message of a fortnightly reader says so; a weekly reader's is as it always was.
    @Test func aFortnightlyMessageSaysItsWeeks() async throws {
        let reads = ReaderHistory(reads: [
            Self.read("p1", day: -10, seconds: 1200), Self.read("c1", day: -6, seconds: 900), Self.read("c2", day: 2, seconds: 900),
        ])
        let weekly = await Self.composer().composeUser(Self.reader(), history: reads)
        #expect(weekly.plan?.title == "Your week: 1 article, 15 min")
        #expect(weekly.plan?.body.hasPrefix("1 day active · top topic: Swift · ±0% vs last week\n") == true)
        let user = await Self.composer().composeUser(Self.reader(.init(every: 2, from: Self.week)), history: reads)
        #expect(user.plan?.title == "In these 2 weeks: 2 articles, 30 min")
        #expect(user.plan?.body.hasPrefix("2 days active · top topic: Swift · +50% vs the 2 weeks before\n") == true)
    }

    // MARK: texts in four locales

    static func texts(_ locale: String, weeks: Int, read: Int = 3, minutes: Int = 24, previous: Int = 20) -> (title: String, header: String, body: String) {
        let templates = shippedCatalog.localized(for: locale)
        let reader = Reader(id: "u1", locale: locale, timeZone: "Europe/Warsaw", optedOut: false, devices: [])
        let stats = WeeklyStats(
            articlesRead: read, minutesRead: minutes, activeDays: 2, topTopic: "swift", previousArticlesRead: 2, previousMinutesRead: previous)
        let digest = WeeklyDigest(reader: reader, window: PlanFixture.window, stats: stats, picks: PlanFixture.articles(["Pick"]), coveredWeeks: weeks)
        let model = DigestViewModel(digest, templates: templates)
        return (templates.render(.title, model), templates.render(.header, model), templates.render(.defaultBody, model))
    }

    @Test(arguments: [
        ("en", 1, "Your week: 3 articles, 24 min", "2 days active · top topic: Swift · +20% vs last week"),
        ("en", 2, "In these 2 weeks: 3 articles, 24 min", "2 days active · top topic: Swift · +20% vs the 2 weeks before"),
        ("en", 4, "In these 4 weeks: 3 articles, 24 min", "2 days active · top topic: Swift · +20% vs the 4 weeks before"),
        ("ru", 1, "Ваша неделя: 3 статьи, 24 минуты", "Активность: 2 дня · главная тема: Swift · +20% к прошлой неделе"),
        ("ru", 2, "За эти 2 недели: 3 статьи, 24 минуты", "Активность: 2 дня · главная тема: Swift · +20% к предыдущим 2 неделям"),
        ("ru", 4, "За эти 4 недели: 3 статьи, 24 минуты", "Активность: 2 дня · главная тема: Swift · +20% к предыдущим 4 неделям"),
        ("pl", 1, "Twój tydzień: 3 artykuły, 24 minuty", "Aktywność: 2 dni · temat tygodnia: Swift · +20% wobec zeszłego tygodnia"),
        ("pl", 2, "Ostatnie 2 tygodnie: 3 artykuły, 24 minuty", "Aktywność: 2 dni · główny temat: Swift · +20% wobec poprzednich 2 tygodni"),
        ("pl", 4, "Ostatnie 4 tygodnie: 3 artykuły, 24 minuty", "Aktywność: 2 dni · główny temat: Swift · +20% wobec poprzednich 4 tygodni"),
        ("zh-Hans", 1, "本周阅读：3篇文章，24分钟", "活跃2天 · 热门主题：Swift · 较上周+20%"),
        ("zh-Hans", 2, "这2周：3篇文章，24分钟", "活跃2天 · 热门主题：Swift · 较前2周+20%"),
        ("zh-Hans", 4, "这4周：3篇文章，24分钟", "活跃2天 · 热门主题：Swift · 较前4周+20%"),
    ] as [(String, Int, String, String)])
    func theTextsSayTheWeeks(locale: String, weeks: Int, title: String, header: String) {
        let texts = Self.texts(locale, weeks: weeks)
        #expect(texts.title == title)
        #expect(texts.header == header)
    }

    /// The longest title, Polish over two weeks, fits the title's 50 characters with three-digit
    /// minutes (so "Ostatnie 2 tygodnie", not the longer genitive "W ciągu ostatnich 2 tygodni", which
    /// the header and the re-engagement body use); a longer one is cut by the title rule like any other.
    @Test func aLongPolishMultiWeekTitleIsCutLikeAnyOther() throws {
        let reader = Reader(id: "u1", locale: "pl", timeZone: "Europe/Warsaw", optedOut: false, devices: [])
        let stats = WeeklyStats(articlesRead: 12, minutesRead: 145, activeDays: 9, topTopic: "swift", previousArticlesRead: 2, previousMinutesRead: 20)
        let digest = WeeklyDigest(reader: reader, window: PlanFixture.window, stats: stats, picks: PlanFixture.articles(["Pick", "Other"]), coveredWeeks: 2)
        let plan = try PlanFixture.plan(digest)
        #expect(plan.title == "Ostatnie 2 tygodnie: 12 artykułów, 145 minut")
        #expect(!plan.rules.contains { $0.hasPrefix("title.truncated") })
        let short = WeeklyDigest(
            reader: reader, window: PlanFixture.window,
            stats: WeeklyStats(articlesRead: 9, minutesRead: 95, activeDays: 9, topTopic: "swift", previousArticlesRead: 2, previousMinutesRead: 20),
            picks: PlanFixture.articles(["Pick", "Other"]), coveredWeeks: 2)
        #expect(try PlanFixture.plan(short).title == "Ostatnie 2 tygodnie: 9 artykułów, 95 minut")
    }

    @Test func theWeeksInEveryCase() {
        let ru = shippedCatalog.localized(for: "ru")
        #expect((1...5).map { ru.plural("weeks", $0) } == ["1 неделя", "2 недели", "3 недели", "4 недели", "5 недель"])
        #expect((1...5).map { ru.plural("weeks", $0, case: .accusative) } == ["1 неделю", "2 недели", "3 недели", "4 недели", "5 недель"])
        #expect((1...5).map { ru.plural("weeks", $0, case: .dative) } == ["1 неделе", "2 неделям", "3 неделям", "4 неделям", "5 неделям"])
        let pl = shippedCatalog.localized(for: "pl")
        #expect((1...5).map { pl.plural("weeks", $0) } == ["1 tydzień", "2 tygodnie", "3 tygodnie", "4 tygodnie", "5 tygodni"])
        #expect((1...5).map { pl.plural("weeks", $0, case: .genitive) } == ["1 tygodnia", "2 tygodni", "3 tygodni", "4 tygodni", "5 tygodni"])
        #expect(shippedCatalog.localized(for: "en").plural("weeks", 1) == "1 week")
        #expect(shippedCatalog.localized(for: "zh-Hans").plural("weeks", 4) == "4周")
        // A weekly digest has no `weeks`: the `{{^weeks}}` texts, as before.
        let weekly = DigestViewModel(PlanFixture.digest(), templates: ru)
        #expect(weekly.text(named: "weeks") == nil && weekly.text(named: "weeksAccusative") == nil && weekly.caseForms["weeksAccusative"] == nil)
        #expect(weekly.child(named: "weeksCount") as? Int == 1)
    }

    @Test func theBodiesSayTheWeeksWhereTheyNamedTheWeek() {
        #expect(Self.texts("zh-Hans", weeks: 1).body == "本周你读了3篇文章，共24分钟。推荐：Pick")
        #expect(Self.texts("zh-Hans", weeks: 2).body == "这2周你读了3篇文章，共24分钟。推荐：Pick")
        #expect(Self.texts("ru", weeks: 2).body == "Вы прочитали 3 статьи за 24 минуты. Дальше: Pick")
        let reengage: [(String, Int, String)] = [
            ("en", 1, "See what is new this week."), ("en", 2, "See what is new from these 2 weeks."),
            ("ru", 1, "Посмотрите, что нового на этой неделе."), ("ru", 4, "Посмотрите, что нового за эти 4 недели."),
            ("pl", 1, "Zobacz, co nowego w tym tygodniu."), ("pl", 2, "Zobacz, co nowego w ciągu ostatnich 2 tygodni."),
            ("zh-Hans", 1, "看看本周有什么新内容。"), ("zh-Hans", 2, "看看这2周有什么新内容。"),
        ]
        for (locale, weeks, text) in reengage {
            let templates = shippedCatalog.localized(for: locale)
            let reader = Reader(id: "u1", locale: locale, timeZone: "UTC", optedOut: false, devices: [])
            let stats = WeeklyStats(articlesRead: 0, minutesRead: 0, activeDays: 0, topTopic: nil, previousArticlesRead: 0, previousMinutesRead: 0)
            let digest = WeeklyDigest(reader: reader, window: PlanFixture.window, stats: stats, picks: [], coveredWeeks: weeks)
            #expect(templates.render(.reengageBody, DigestViewModel(digest, templates: templates)) == text, "\(locale) \(weeks)")
        }
    }

    // MARK: pausedUntil

    /// Due Monday 2026-11-23 09:00 UTC: paused through the 23rd, not through the 22nd.
    @Test func aPauseHoldsTheDigestDueOnOrBeforeItsDate() async throws {
        let through23 = await Self.composer().composeUser(Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 23))), history: Self.history)
        #expect(through23.skipped == .paused && through23.messages.isEmpty)
        let through22 = await Self.composer().composeUser(Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 22))), history: Self.history)
        #expect(through22.skipped == nil && through22.messages.count == 1)
        // The first digest after the pause covers only its own week.
        #expect(through22.plan?.title == "Your week: 3 articles, 15 min")
    }

    /// A late run inside the quiet hours moves the due time to their end the next morning: the date
    /// that counts is that one.
    @Test func aLateRunsDueDateIsTheOneThatCounts() async throws {
        let late = Self.monday + 7 * Self.day + 22 * 3600  // Monday 22:00Z, inside 21:00–08:00
        let composer = Self.composer(now: late)
        let slot = composer.slot(for: Self.reader())
        #expect(slot.availableAt == Self.monday + 8 * Self.day + 8 * 3600)  // Tuesday 08:00Z
        let through23 = await composer.composeUser(Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 23))), history: Self.history)
        #expect(through23.skipped == nil)
        let through24 = await composer.composeUser(Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 24))), history: Self.history)
        #expect(through24.skipped == .paused)
    }

    /// The local date in the reader's zone: Monday 09:00 at Kiritimati (UTC+14) is Sunday 19:00Z.
    @Test func thePauseIsInTheReadersZone() async throws {
        let early = Self.monday + 6 * Self.day + 12 * 3600  // Sunday 12:00Z
        let composer = Self.composer(now: early)
        let zone = "Pacific/Kiritimati"
        #expect(composer.slot(for: Self.reader(zone: zone)).availableAt == Self.monday + 6 * Self.day + 19 * 3600)
        let through22 = await composer.composeUser(Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 22)), zone: zone), history: Self.history)
        #expect(through22.skipped == nil)
        let through23 = await composer.composeUser(Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 23)), zone: zone), history: Self.history)
        #expect(through23.skipped == .paused)
    }

    // MARK: counted

    /// Every skip in the batch's `skipped`, none of them digested, in a variant or a timing group.
    @Test func everySkipIsCountedAndNoSkippedReaderIsInADenominator() async throws {
        var off = Self.reader(id: "off")
        off.optedOut = true
        let readers = [
            Self.reader(id: "plain"),
            off,
            Self.reader(.init(every: 4, from: ISOWeek(year: 2026, week: 46)!), id: "not-due"),
            Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 12, day: 1)), id: "paused"),
            Self.reader(.init(every: 4, from: ISOWeek(year: 2026, week: 43)!, mute: ["sports"]), id: "due"),
        ]
        let batch = await Self.composer().compose(readers, histories: Array(repeating: Self.history, count: readers.count), batch: 0)
        #expect(batch.counters.users == 5)
        #expect(batch.counters.skipped == ["opted_out": 1, "not_this_week": 1, "paused": 1])
        #expect(batch.counters.digested == 2)
        #expect(batch.counters.variants.values.reduce(0, +) == 2)
        #expect(batch.counters.messages == 2)
        #expect(Set(batch.messages.map(\.userID)) == ["plain", "due"])
    }

    /// Habit timing: a reader reading at 19:00 UTC is due Monday 19:00 (or at the fallback 09:00 in
    /// the control group); a pause checks that due time, and a paused reader is in no timing group
    /// nor any variant split.
    @Test func preferencesApplyAlikeInEveryTimingGroupAndArm() async throws {
        let evening = ReaderHistory(reads: (0..<6).map {
            ReadEvent(articleID: "e\($0)", topics: ["swift"], readAt: Self.monday + Int64($0) * Self.day + 19 * 3600 + 300, seconds: 300, language: "en")
        })
        for control in [0, 100] {
            var configuration = BatchComposer.Configuration(week: Self.week)
            configuration.habit = HabitDelivery(control: ControlGroup(percent: control))
            configuration.planner.policy = .split(imagePercent: 50)
            let composer = BatchComposer(
                configuration: configuration, articles: Self.articles, templates: shippedCatalog, attachments: NoAttachments(), now: Self.now)
            let readers = [
                Self.reader(id: "plain"),
                Self.reader(.init(pausedUntil: CivilDate(year: 2026, month: 11, day: 23)), id: "paused"),
                Self.reader(.init(every: 2, from: ISOWeek(year: 2026, week: 46)!), id: "not-due"),
            ]
            let batch = await composer.compose(readers, histories: Array(repeating: evening, count: 3), batch: 0)
            #expect(batch.counters.skipped == ["paused": 1, "not_this_week": 1])
            #expect(batch.counters.timings == [control == 0 ? "habit" : "control": 1])
            #expect(batch.counters.variants.values.reduce(0, +) == 1)
            #expect(batch.messages.map(\.userID) == ["plain"])
            #expect(batch.messages.first?.availableAt == Self.monday + 7 * Self.day + (control == 0 ? 19 : 9) * 3600)
        }
    }

    /// Preferences left at their defaults change nothing: the same messages, byte for byte.
    @Test func defaultPreferencesGiveTheSameMessages() async throws {
        var stated = Self.reader()
        stated.preferences = ReaderPreferences(every: 1, from: ISOWeek(year: 2026, week: 40)!, follow: [], mute: [])
        let plain = await Self.composer().composeUser(Self.reader(), history: Self.history)
        let same = await Self.composer().composeUser(stated, history: Self.history)
        #expect(plain.messages.map(\.message) == same.messages.map(\.message))
        #expect(!plain.messages.isEmpty)
    }
}
