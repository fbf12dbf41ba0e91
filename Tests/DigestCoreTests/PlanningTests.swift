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
        let encoder = NotificationEncoder()
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

    /// Android's count is its section, which carries each key once: each byte of the link costs one.
    /// An Image plan whose Android bytes are exactly FCM's 4,096 is sent as it is; one more byte of
    /// link and the planner shortens the body.
    @Test func androidAtFCMsLimitCountsEachKeyOnce() throws {
        let limit = VariantPlanner.Configuration.ceiling(for: .android)
        #expect(limit == 4096)
        func plan(linkPadding: Int) throws -> NotificationPlan {
            var digest = PlanFixture.digest(picks: 1, titles: ["Swift 6 migration guide: strict concurrency for server applications"])
            var top = digest.picks[0]
            top.url += "?" + String(repeating: "x", count: linkPadding)
            digest = WeeklyDigest(reader: digest.reader, window: digest.window, stats: digest.stats, picks: [top])
            return try PlanFixture.plan(digest, image: .ready(PlanFixture.renditions), budget: limit, platforms: [.android])
        }
        let base = try #require(try plan(linkPadding: 0).bytes[.android])
        #expect(try plan(linkPadding: 10).bytes[.android] == base + 10)

        let atLimit = try plan(linkPadding: limit - base)
        #expect(atLimit.variant == .image)
        #expect(atLimit.bytes == [.android: limit])
        #expect(atLimit.rules.isEmpty, "\(atLimit.rules)")
        let body = NotificationEncoder().message(for: atLimit, device: Device(token: "t", platform: .android))
        let message = try #require((try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["message"] as? [String: Any])
        #expect(message["data"] == nil)
        let androidData = try #require((message["android"] as? [String: Any])?["data"] as? [String: String])
        #expect(androidData["deep_link"] == atLimit.topPickURL)
        // What is counted is the section as sent.
        let section = try JSONSerialization.data(withJSONObject: try #require(message["android"]), options: [.withoutEscapingSlashes])
        #expect(String(decoding: body, as: UTF8.self).utf8.count > limit && section.count == limit)

        let over = try plan(linkPadding: limit - base + 1)
        #expect(over.variant == .image)
        #expect(over.rules == ["budget.body:60", "body.truncated:60"])
        #expect(try #require(over.bytes[.android]) <= limit)
    }

    @Test func impossibleBudgetThrows() {
        #expect(throws: PlanningError.self) { try PlanFixture.plan(PlanFixture.digest(picks: 3), budget: 100) }
    }
}

@Suite("FCM golden messages")
struct GoldenMessageTests {
    /// Every plan has a top pick with an https URL: only the Image message opens it.
    static func plan(_ variant: Variant) -> NotificationPlan {
        let body = switch variant {
        case .image: "Top pick: Swift 6 \"strict\" concurrency"
        case .bigText: "2 days active\n• Actors\n• Macros"
        case .defaultText: "You read 3 articles in 24 min. Next up: Actors"
        }
        return NotificationPlan(
            digestID: "2026-W47:u1", week: PlanFixture.week, userID: "u1", variant: variant,
            title: "Your week: 3 articles, 24 min", body: body, image: variant == .image ? PlanFixture.renditions : nil,
            picks: ["a1", "a2"], rules: [], bytes: [:], arm: nil,
            actions: [.init(id: "open", title: "Read"), .init(id: "later", title: "Later"), .init(id: "share", title: "Share")],
            deliverAt: 1795420800, topPickURL: "https://news.example/a1")
    }

    /// The whole request body per variant and platform, byte for byte. An Android message has no
    /// top-level `data`: its `android.data` starts with the keys iOS and web messages carry there; an
    /// Image message opens the top pick, the others the weekly page.
    static let golden: [String: String] = [
        "BigText-android": #"{"message":{"token":"tok-android","android":{"collapse_key":"digest-2026-W47","ttl":"604800s","priority":"normal","data":{"message_id":"33d4848d10fcde4bae516a85e49de560","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47","title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros","type":"BigText","picks":"2","actions":"[{\"id\":\"open\",\"title\":\"Read\"},{\"id\":\"later\",\"title\":\"Later\"},{\"id\":\"share\",\"title\":\"Share\"}]"}},"fcm_options":{"analytics_label":"digest-2026-W47-BigText"}}}"#,
        "BigText-ios": #"{"message":{"token":"tok-ios","data":{"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"},"apns":{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"},"payload":{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros"},"category":"digest","thread-id":"weekly-digest","mutable-content":1}}},"fcm_options":{"analytics_label":"digest-2026-W47-BigText"}}}"#,
        "BigText-web": #"{"message":{"token":"tok-web","data":{"message_id":"ba21beba75510cb741043a94f9e7124e","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"},"webpush":{"headers":{"TTL":"604800","Urgency":"normal"},"notification":{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47"},"fcm_options":{"link":"https://digest.example/weekly/2026-W47"}},"fcm_options":{"analytics_label":"digest-2026-W47-BigText"}}}"#,
        "Image-android": #"{"message":{"token":"tok-android","android":{"collapse_key":"digest-2026-W47","ttl":"604800s","priority":"normal","data":{"message_id":"33d4848d10fcde4bae516a85e49de560","digest_id":"2026-W47:u1","deep_link":"https://news.example/a1","title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency","type":"Image","picks":"2","imageUrl":"https://cdn.example/att/abc.jpg","iconUrl":"https://cdn.example/att/def.png","actions":"[{\"id\":\"open\",\"title\":\"Read\"},{\"id\":\"later\",\"title\":\"Later\"},{\"id\":\"share\",\"title\":\"Share\"}]"}},"fcm_options":{"analytics_label":"digest-2026-W47-Image"}}}"#,
        "Image-ios": #"{"message":{"token":"tok-ios","data":{"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://news.example/a1"},"apns":{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"},"payload":{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency"},"category":"digest","thread-id":"weekly-digest","mutable-content":1},"imageUrl":"https://cdn.example/att/abc.jpg"},"fcm_options":{"image":"https://cdn.example/att/abc.jpg"}},"fcm_options":{"analytics_label":"digest-2026-W47-Image"}}}"#,
        "Image-web": #"{"message":{"token":"tok-web","data":{"message_id":"ba21beba75510cb741043a94f9e7124e","digest_id":"2026-W47:u1","deep_link":"https://news.example/a1"},"webpush":{"headers":{"TTL":"604800","Urgency":"normal"},"notification":{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency","icon":"https://cdn.example/att/def.png","image":"https://cdn.example/att/abc.jpg","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47"},"fcm_options":{"link":"https://news.example/a1"}},"fcm_options":{"analytics_label":"digest-2026-W47-Image"}}}"#,
        "Default-android": #"{"message":{"token":"tok-android","android":{"collapse_key":"digest-2026-W47","ttl":"604800s","priority":"normal","data":{"message_id":"33d4848d10fcde4bae516a85e49de560","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47","title":"Your week: 3 articles, 24 min","body":"You read 3 articles in 24 min. Next up: Actors","type":"Default","picks":"2","actions":"[{\"id\":\"open\",\"title\":\"Read\"},{\"id\":\"later\",\"title\":\"Later\"},{\"id\":\"share\",\"title\":\"Share\"}]"}},"fcm_options":{"analytics_label":"digest-2026-W47-Default"}}}"#,
        "Default-ios": #"{"message":{"token":"tok-ios","data":{"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"},"apns":{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"},"payload":{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"You read 3 articles in 24 min. Next up: Actors"},"category":"digest","thread-id":"weekly-digest","mutable-content":1}}},"fcm_options":{"analytics_label":"digest-2026-W47-Default"}}}"#,
        "Default-web": #"{"message":{"token":"tok-web","data":{"message_id":"ba21beba75510cb741043a94f9e7124e","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"},"webpush":{"headers":{"TTL":"604800","Urgency":"normal"},"notification":{"title":"Your week: 3 articles, 24 min","body":"You read 3 articles in 24 min. Next up: Actors","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47"},"fcm_options":{"link":"https://digest.example/weekly/2026-W47"}},"fcm_options":{"analytics_label":"digest-2026-W47-Default"}}}"#,
    ]

    static func message(_ variant: Variant, _ platform: Platform) -> String {
        let device = Device(token: "tok-\(platform.rawValue)", platform: platform)
        return String(decoding: NotificationEncoder().message(for: plan(variant), device: device), as: UTF8.self)
    }

    static func object(_ variant: Variant, _ platform: Platform) throws -> [String: Any] {
        let json = try JSONSerialization.jsonObject(with: Data(message(variant, platform).utf8))
        return try #require((json as? [String: Any])?["message"] as? [String: Any])
    }

    @Test(arguments: Variant.allCases, Platform.allCases)
    func goldenBodies(variant: Variant, platform: Platform) throws {
        let expected = try #require(Self.golden["\(variant.rawValue)-\(platform.rawValue)"])
        #expect(Self.message(variant, platform) == expected)
    }

    /// A platform's budget counts what its request carries, on the exact bytes: iOS the APNs payload
    /// with the top-level data's keys beside `aps` (what APNs gets), web the top-level data and the
    /// section, Android its section alone (no top-level data; `android.data` holds every key once).
    @Test(arguments: Variant.allCases)
    func budgetsCountWhatIsSent(variant: Variant) throws {
        let encoder = NotificationEncoder()
        let plan = Self.plan(variant)
        func part(_ platform: Platform, _ key: String) throws -> Int {
            let body = Self.message(variant, platform)
            // The golden bodies end with the section, the message's `fcm_options` (for FCM, not the
            // device: no budget counts it) and `}}`; data, when there is one, runs from `"data":` to
            // the section.
            let section = try #require(body.range(of: #","\#(key)":"#))
            let end = try #require(body.range(of: #","fcm_options":{"analytics_label":"#)?.lowerBound)
            var dataBytes = 0
            if platform != .android {
                let data = try #require(body.range(of: #""data":"#)?.upperBound)
                dataBytes = body[data..<section.lowerBound].utf8.count
            } else {
                #expect(body.hasPrefix(#"{"message":{"token":"tok-android","android":{"#), "no top-level data on Android")
            }
            var sectionText = body[section.upperBound..<end]
            if platform == .ios {
                let payload = try #require(sectionText.range(of: #""payload":"#)?.upperBound)
                let close = sectionText.range(of: #","fcm_options""#)?.lowerBound ?? sectionText.index(before: sectionText.endIndex)
                sectionText = sectionText[payload..<close]
            }
            // iOS: the payload as APNs gets it, the data's members beside `aps` (one `{}` pair and
            // a comma fewer than the two objects).
            return dataBytes + sectionText.utf8.count - (platform == .ios ? 1 : 0)
        }
        let counted = [
            Platform.android: try part(.android, "android"), .ios: try part(.ios, "apns"), .web: try part(.web, "webpush"),
        ]
        for platform in Platform.allCases {
            #expect(encoder.budgetBytes(for: plan, platform: platform) == counted[platform], "\(platform)")
        }
        #expect(encoder.encode(plan, platforms: Set(Platform.allCases)).bytes == counted)
        // iOS and web count the top-level data, 128 bytes with the weekly link, 113 with the top
        // pick's; Android's section holds the same keys once, in `android.data`. Every APNs payload
        // has `,"mutable-content":1` (20 bytes), not only the Image one's.
        let figures: [Variant: [Platform: Int]] = [
            .bigText: [.android: 451, .ios: 128 + 174 - 1, .web: 128 + 321],
            .image: [.android: 526, .ios: 113 + 222 - 1, .web: 113 + 392],
            .defaultText: [.android: 460, .ios: 128 + 183 - 1, .web: 128 + 330],
        ]
        #expect(counted == figures[variant])
    }

    /// The keys an app reads on each platform: Android gets `android.data` only, which holds every
    /// key (the message has no top-level `data`); iOS gets the top-level `data` beside `aps` in the APNs payload;
    /// the web gets `data` and opens `fcm_options.link`, the same URL as `deep_link`.
    @Test(arguments: Variant.allCases)
    func keysThatReachTheApp(variant: Variant) throws {
        let link = variant == .image ? "https://news.example/a1" : "https://digest.example/weekly/2026-W47"
        // `message_id` is the device's own (from its dedupe key); the rest is the same for every device.
        func sharedData(_ platform: Platform) -> [String: String] {
            let key = OutboxMessage.dedupeKey(week: PlanFixture.week, userID: "u1", token: "tok-\(platform.rawValue)")
            return ["message_id": OutboxMessage.messageID(dedupeKey: key), "digest_id": "2026-W47:u1", "deep_link": link]
        }
        let image = variant == .image
        #expect(Set(Platform.allCases.map { sharedData($0)["message_id"]! }).count == 3, "one id per device")

        let android = try Self.object(variant, .android)
        let shared = sharedData(.android)
        #expect(android["data"] == nil, "FCM would hand an Android app android.data instead")
        let androidData = try #require((android["android"] as? [String: Any])?["data"] as? [String: String])
        #expect(Set(androidData.keys) == Set(shared.keys).union(["title", "body", "type", "picks", "actions"]).union(image ? ["imageUrl", "iconUrl"] : []))
        for (key, value) in shared { #expect(androidData[key] == value, "android.data.\(key)") }
        #expect(androidData["type"] == variant.rawValue)
        let actions = try #require(androidData["actions"])
        #expect(try JSONSerialization.jsonObject(with: Data(actions.utf8)) is [[String: String]])

        let ios = try Self.object(variant, .ios)
        #expect(try #require(ios["data"] as? [String: String]) == sharedData(.ios))
        let apns = try #require(ios["apns"] as? [String: Any])
        #expect(Set(apns.keys) == (image ? ["headers", "payload", "fcm_options"] : ["headers", "payload"]))
        let headers = try #require(apns["headers"] as? [String: String])
        #expect(Set(headers.keys) == ["apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id"])
        let payload = try #require(apns["payload"] as? [String: Any])
        #expect(Set(payload.keys) == (image ? ["aps", "imageUrl"] : ["aps"]))
        #expect(Set(payload.keys).isDisjoint(with: shared.keys), "FCM adds the data keys to the payload itself")
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(Set(aps.keys) == ["alert", "category", "thread-id", "mutable-content"])
        #expect((aps["mutable-content"] as? Int) == 1, "every message: the service extension reports receipt")

        let web = try Self.object(variant, .web)
        #expect(try #require(web["data"] as? [String: String]) == sharedData(.web))
        let webpush = try #require(web["webpush"] as? [String: Any])
        #expect(Set(webpush.keys) == ["headers", "notification", "fcm_options"], "no webpush.data: it would replace data")
        #expect((webpush["fcm_options"] as? [String: String]) == ["link": link])
        let notification = try #require(webpush["notification"] as? [String: Any])
        #expect(Set(notification.keys) == Set(["title", "body", "actions", "tag"]).union(image ? ["icon", "image"] : []))
        #expect(try #require(notification["actions"] as? [Any]).count <= 2)

        for platform in Platform.allCases {
            let object = try Self.object(variant, platform)
            let sections = Set(object.keys).subtracting(["token", "data", "fcm_options"])
            #expect(sections == [NotificationEncoder.sectionKey(platform)])
            #expect((object["fcm_options"] as? [String: String]) == ["analytics_label": "digest-2026-W47-\(variant.rawValue)"])
        }
    }
}
