import Foundation
import Testing

@testable import DigestCore

/// A fixed user, week and set of picks for planning and encoding.
enum PlanFixture {
    static let week = ISOWeek(year: 2026, week: 47)!
    static let window = WeekCalendar(week: week).window(forZone: "Europe/Warsaw").window
    static let titles = ["Swift 6 migration guide", "Actors in practice", "Typed throws explained", "Macros", "Regex"]
    static let renditions = ImageRenditions(
        hero: Rendition(url: "https://cdn.example/att/abc.jpg", mimeType: "image/jpeg", width: 1024, height: 512, byteCount: 50_000),
        icon: Rendition(url: "https://cdn.example/att/def.png", mimeType: "image/png", width: 256, height: 256, byteCount: 9_000))

    static func articles(_ titles: [String]) -> [Article] {
        titles.enumerated().map { i, title in
            Article(id: "a\(i + 1)", title: title, url: "https://news.example/a\(i + 1)", imageURL: "https://img.example/\(i + 1).jpg",
                topics: ["swift"], publishedAt: window.start - Int64(i) * 3600, readingMinutes: 5 + i)
        }
    }

    static func digest(
        picks: Int = 3, titles: [String] = titles, locale: String = "en", user: String = "u1", read: Int = 3,
        topTopic: String? = "swift"
    ) -> WeeklyDigest {
        let reader = Reader(id: user, locale: locale, timeZone: "Europe/Warsaw", optedOut: false, devices: [])
        let stats = WeeklyStats(articlesRead: read, minutesRead: 24, activeDays: 2, topTopic: topTopic,
            previousArticlesRead: 2, previousMinutesRead: 20)
        return WeeklyDigest(reader: reader, window: window, stats: stats, picks: Array(articles(titles).prefix(picks)))
    }

    static func plan(
        _ digest: WeeklyDigest, image: ImageOutcome? = nil, policy: VariantPolicy = .preferImage, budget: Int = 3800,
        platforms: Set<Platform> = Set(Platform.allCases)
    ) throws -> NotificationPlan {
        var configuration = VariantPlanner.Configuration()
        configuration.policy = policy
        configuration.byteBudget = budget
        return try VariantPlanner(configuration: configuration).plan(
            digest, templates: shippedCatalog.localized(for: digest.reader.locale), image: image, platforms: platforms)
    }
}

@Suite("Variant planning")
struct VariantPlanningTests {
    /// Bullets are cached by locale, article id and limit: one planner that sees an article again
    /// under the same id with another title, reading time or first topic renders it anew.
    @Test func aReusedPlannerRendersAChangedArticleAnew() throws {
        let planner = VariantPlanner()
        let templates = shippedCatalog.localized(for: "en")
        func body(_ picks: [Article]) throws -> String {
            var digest = PlanFixture.digest(picks: 2)
            digest = WeeklyDigest(reader: digest.reader, window: digest.window, stats: digest.stats, picks: picks)
            return try planner.plan(digest, templates: templates, image: nil, platforms: [.android]).body
        }
        var picks = PlanFixture.articles(["First title", "Second title"])
        #expect(try body(picks).hasSuffix("• First title\n• Second title"))
        picks[0].title = "First title, corrected"
        #expect(try body(picks).hasSuffix("• First title, corrected\n• Second title"))
        let custom = FileManager.default.temporaryDirectory.appendingPathComponent("digest-bullets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: custom) }
        try FileManager.default.copyItem(at: templatesDirectory, to: custom)
        try "• {{title}} ({{minutes}}{{#topic}}, {{topic}}{{/topic}})".write(
            to: custom.appendingPathComponent("en/bullet.mustache"), atomically: true, encoding: .utf8)
        let withMinutes = try TemplateCatalog(directory: custom).localized(for: "en-GB")
        func line(_ article: Article) throws -> String {
            let digest = PlanFixture.digest(picks: 2)
            let plan = try planner.plan(
                WeeklyDigest(reader: digest.reader, window: digest.window, stats: digest.stats, picks: [article, picks[1]]),
                templates: withMinutes, image: nil, platforms: [.android])
            return String(plan.body.split(separator: "\n")[1])
        }
        var article = picks[0]
        #expect(try line(article) == "• First title, corrected (5 min, Swift)")
        article.readingMinutes = 9
        #expect(try line(article) == "• First title, corrected (9 min, Swift)")
        article.topics = ["books", "swift"]
        #expect(try line(article) == "• First title, corrected (9 min, books)")
    }

    @Test func bigTextWithTwoOrMorePicks() throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 3))
        #expect(plan.variant == .bigText)
        #expect(plan.title == "Your week: 3 articles, 24 min")
        #expect(plan.body == """
            2 days active · top topic: Swift · +20% vs last week
            • Swift 6 migration guide
            • Actors in practice
            • Typed throws explained
            """)
        #expect(plan.image == nil)
        #expect(plan.picks == ["a1", "a2", "a3"])
        #expect(plan.rules.isEmpty)
        #expect(plan.arm == nil)
        #expect(plan.digestID == "2026-W47:u1")
        #expect(plan.deliverAt == 1795420800)  // Monday 2026-11-23 09:00 CET
        #expect(Set(plan.bytes.keys) == Set(Platform.allCases))
        #expect(plan.actions == [NotificationAction(id: "open", title: "Read"), NotificationAction(id: "later", title: "Later")])
    }

    @Test func defaultWithOnePick() throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 1), platforms: [.android])
        #expect(plan.variant == .defaultText)
        #expect(plan.body == "You read 3 articles in 24 min. Next up: Swift 6 migration guide")
        #expect(Array(plan.bytes.keys) == [.android])
    }

    @Test(arguments: [1, 3])
    func imageWhenRenditionsAreReady(picks: Int) throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: picks), image: .ready(PlanFixture.renditions))
        #expect(plan.variant == .image)
        #expect(plan.body == "Top pick: Swift 6 migration guide")
        #expect(plan.image == PlanFixture.renditions)
    }

    @Test(arguments: [(3, Variant.bigText), (1, Variant.defaultText)])
    func textWhenImageIsUnavailable(picks: Int, variant: Variant) throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: picks), image: .unavailable(reason: "http 404"))
        #expect(plan.variant == variant)
        #expect(plan.image == nil)
        #expect(plan.rules.first == "image.unavailable:http 404")
    }

    @Test func preferTextUsesBigTextWhenPossible() throws {
        let ready = ImageOutcome.ready(PlanFixture.renditions)
        let three = try PlanFixture.plan(PlanFixture.digest(picks: 3), image: ready, policy: .preferText)
        #expect(three.variant == .bigText && three.image == nil)
        let one = try PlanFixture.plan(PlanFixture.digest(picks: 1), image: ready, policy: .preferText)
        #expect(one.variant == .image)
    }

    @Test(arguments: [
        // FNV-1a 64 of "2026-W47:<user>" mod 100, computed outside the code: u1 74, u5 30, u8 97.
        ("u1", 50, "text"), ("u5", 50, "image"), ("u1", 74, "text"), ("u1", 75, "image"), ("u8", 100, "image"),
        ("u8", 0, "text"),
    ] as [(String, Int, String)])
    func splitIsDeterministic(user: String, percent: Int, arm: String) throws {
        let digest = PlanFixture.digest(picks: 3, user: user)
        let ready = ImageOutcome.ready(PlanFixture.renditions)
        let first = try PlanFixture.plan(digest, image: ready, policy: .split(imagePercent: percent))
        let again = try PlanFixture.plan(digest, image: ready, policy: .split(imagePercent: percent))
        #expect(first.arm == arm)
        #expect(first.variant == (arm == "image" ? .image : .bigText))
        #expect(first == again)
        #expect(first.reportJSON().contains("\"arm\":\"\(arm)\""))
    }

    @Test func reengagementAndLocales() throws {
        let idle = try PlanFixture.plan(PlanFixture.digest(picks: 3, read: 0))
        #expect(idle.variant == .defaultText)
        #expect(idle.title == "New stories are waiting for you")
        #expect(idle.body == "Catch up this week: Swift 6 migration guide")
        let pl = try PlanFixture.plan(PlanFixture.digest(picks: 1, locale: "pl-PL"))
        #expect(pl.title == "Twój tydzień: 3 artykuły, 24 minuty")
        #expect(pl.actions.map(\.title) == ["Czytaj", "Później"])
    }

    @Test func moreThanFiveBulletsGetAMoreLine() throws {
        let titles = (1...7).map { "Story \($0)" }
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 7, titles: titles))
        #expect(plan.body.split(separator: "\n").count == 7)
        #expect(plan.body.hasSuffix("• Story 5\n+2 more picks in the app"))
        #expect(plan.rules.contains("bigtext.max_bullets:5"))
    }

    @Test func markupInTitlesStaysLiteral() throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 2, titles: ["{{title}} & <b>", "{{#x}}y{{/x}}"]))
        #expect(plan.body.hasSuffix("• {{title}} & <b>\n• {{#x}}y{{/x}}"))
    }
}

@Suite("Byte budgets")
struct BudgetTests {
    static let families = String(repeating: family, count: 60)
    static let order = ["budget.bullets", "budget.bullet_title", "budget.body", "budget.fallback", "budget.title"]

    static func checkFits(_ plan: NotificationPlan, budget: Int) throws {
        let encoder = FCMEncoder()
        for platform in Platform.allCases {
            let bytes = try #require(plan.bytes[platform])
            #expect(bytes <= min(budget, VariantPlanner.Configuration.ceiling(for: platform)), "\(platform)")
            #expect(bytes == encoder.budgetBytes(for: plan, platform: platform))
            let json = encoder.message(for: plan, device: Device(token: "t", platform: platform))
            #expect((try? JSONSerialization.jsonObject(with: Data(json))) != nil)
        }
        #expect(plan.body.utf16.count < 1024)
        #expect(plan.title.count <= 50)
        let fired = plan.rules.compactMap { rule in order.firstIndex(of: String(rule.prefix { $0 != ":" })) }
        #expect(fired == fired.sorted(), "budget rules out of DESIGN order: \(plan.rules)")
    }

    @Test(arguments: [3800, 1200], ["en", "pl", "ru", "zh-Hans"])
    func worstCaseTitlesFit(budget: Int, locale: String) throws {
        let digest = PlanFixture.digest(picks: 5, titles: Array(repeating: Self.families, count: 5), locale: locale,
            topTopic: String(repeating: family, count: 30))
        for image in [nil, ImageOutcome.ready(PlanFixture.renditions)] {
            let plan = try PlanFixture.plan(digest, image: image, budget: budget)
            try Self.checkFits(plan, budget: budget)
            // At the default budget only Android's UTF-16 cap limits the bullets of a text plan.
            if image == nil && budget == 3800 { #expect(plan.rules.contains("android.utf16.bullets:1")) }
        }
    }

    @Test func smallBudgetDegradesInOrder() throws {
        let digest = PlanFixture.digest(picks: 5, titles: Array(repeating: Self.families, count: 5))
        let plan = try PlanFixture.plan(digest, budget: 700)
        try Self.checkFits(plan, budget: 700)
        let fired = plan.rules.filter { $0.hasPrefix("budget.") }.map { String($0.prefix { $0 != ":" }) }
        #expect(fired == Array(Self.order.prefix(4)), "\(plan.rules)")
        #expect(plan.variant == .defaultText)
        #expect(plan.body == "You read 3 articles in 24 min. Next up…")
    }

    @Test(arguments: [Variant.defaultText, .image])
    func combiningMarkPileUpsStayUnderAndroidCap(variant: Variant) throws {
        // One letter with 20 combining marks is one grapheme of 20 UTF-16 units (after NFC).
        let zalgo = String(repeating: "a" + String(repeating: "\u{0301}", count: 20), count: 130)
        let image: ImageOutcome? = variant == .image ? .ready(PlanFixture.renditions) : nil
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 1, titles: [zalgo]), image: image)
        #expect(plan.variant == variant)
        #expect(plan.body.utf16.count < 1024, "Android body is \(plan.body.utf16.count) UTF-16 units")
    }

    @Test func impossibleBudgetThrows() {
        #expect(throws: PlanningError.self) { try PlanFixture.plan(PlanFixture.digest(picks: 3), budget: 100) }
    }
}

@Suite("FCM golden messages")
struct GoldenMessageTests {
    static func plan(image: Bool) -> NotificationPlan {
        NotificationPlan(
            digestID: "2026-W47:u1", week: PlanFixture.week, userID: "u1", variant: image ? .image : .bigText,
            title: "Your week: 3 articles, 24 min",
            body: image ? "Top pick: Swift 6 \"strict\" concurrency" : "2 days active\n• Actors",
            image: image ? PlanFixture.renditions : nil, picks: ["a1", "a2"], rules: [], bytes: [:], arm: nil,
            actions: [.init(id: "open", title: "Read"), .init(id: "later", title: "Later"), .init(id: "share", title: "Share")],
            deliverAt: 1795420800)
    }

    static let data = #"{"digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#
    static let android = #"{"collapse_key":"digest-2026-W47","ttl":"604800s","priority":"normal","data":{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency","type":"Image","imageUrl":"https://cdn.example/att/abc.jpg","iconUrl":"https://cdn.example/att/def.png","actions":"[{\"id\":\"open\",\"title\":\"Read\"},{\"id\":\"later\",\"title\":\"Later\"},{\"id\":\"share\",\"title\":\"Share\"}]"}}"#
    static let apnsPayload = #"{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency"},"category":"WEEKLY_DIGEST","thread-id":"weekly-digest","mutable-content":1},"imageUrl":"https://cdn.example/att/abc.jpg"}"#
    static let apns = #"{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"},"payload":"# + apnsPayload + #","fcm_options":{"image":"https://cdn.example/att/abc.jpg"}}"#
    static let webpush = #"{"headers":{"TTL":"604800","Urgency":"normal"},"notification":{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency","icon":"https://cdn.example/att/def.png","image":"https://cdn.example/att/abc.jpg","actions":[{"action":"open","title":"Read"},{"action":"later","title":"Later"}],"tag":"digest-2026-W47"},"fcm_options":{"link":"https://digest.example/weekly/2026-W47"}}"#
    static let iosText = #"{"message":{"token":"tok-ios","data":"# + data + #","apns":{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"},"payload":{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors"},"category":"WEEKLY_DIGEST","thread-id":"weekly-digest"}}}}}"#

    static func message(_ platform: Platform, image: Bool = true) -> String {
        let device = Device(token: "tok-\(platform.rawValue)", platform: platform)
        return String(decoding: FCMEncoder().message(for: plan(image: image), device: device), as: UTF8.self)
    }

    @Test func goldenBodies() {
        let key = ["android": "android", "ios": "apns", "web": "webpush"]
        let section = ["android": Self.android, "ios": Self.apns, "web": Self.webpush]
        for platform in Platform.allCases {
            let expected = #"{"message":{"token":"tok-"# + platform.rawValue + #"","data":"# + Self.data + #",""#
                + key[platform.rawValue]! + #"":"# + section[platform.rawValue]! + "}}"
            #expect(Self.message(platform) == expected)
        }
        #expect(Self.message(.ios, image: false) == Self.iosText)
    }

    @Test func budgetsCountDataAndSection() {
        let encoder = FCMEncoder()
        let plan = Self.plan(image: true)
        #expect(encoder.budgetBytes(for: plan, platform: .android) == (Self.data + Self.android).utf8.count)
        #expect(encoder.budgetBytes(for: plan, platform: .ios) == (Self.data + Self.apnsPayload).utf8.count)
        #expect(encoder.budgetBytes(for: plan, platform: .web) == (Self.data + Self.webpush).utf8.count)
    }

    @Test(arguments: [true, false])
    func designShape(image: Bool) throws {
        func object(_ platform: Platform) throws -> [String: Any] {
            let json = try JSONSerialization.jsonObject(with: Data(Self.message(platform, image: image).utf8))
            return try #require((json as? [String: Any])?["message"] as? [String: Any])
        }
        let android = try #require(try object(.android)["android"] as? [String: Any])
        let androidData = try #require(android["data"] as? [String: Any])
        #expect(androidData.values.allSatisfy { $0 is String })
        let actions = try #require(androidData["actions"] as? String)
        #expect(try JSONSerialization.jsonObject(with: Data(actions.utf8)) is [[String: String]])
        #expect((androidData["imageUrl"] != nil) == image)
        let apns = try #require(try object(.ios)["apns"] as? [String: Any])
        let headers = try #require(apns["headers"] as? [String: String])
        #expect(Set(headers.keys) == ["apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id"])
        let aps = try #require((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect((aps["mutable-content"] as? Int) == (image ? 1 : nil))
        let web = try #require(try object(.web)["webpush"] as? [String: Any])
        let notification = try #require(web["notification"] as? [String: Any])
        #expect(try #require(notification["actions"] as? [Any]).count <= 2)
        let link = try #require((web["fcm_options"] as? [String: String])?["link"])
        #expect(link.hasPrefix("https://"))
        #expect(try object(.web)["android"] == nil && object(.web)["apns"] == nil)
    }
}
