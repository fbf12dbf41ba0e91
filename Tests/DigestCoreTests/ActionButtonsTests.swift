import Foundation
import Testing

@testable import DigestCore

/// The buttons that change next week's digest (issue 42): each platform's buttons and category, the
/// `reply_key` and `fewer_topic` beside `message_id` (golden bodies, counted in the budgets), `--actions`
/// lists, and the run holding back "fewer" topics at a fixed instant.
@Suite("Action buttons and reply keys")
struct ActionButtonsTests {
    static let secret = "a-reply-key-secret-of-32-bytes!!"
    static let keys = try! ReplyKeys(secrets: [secret])

    static func plan(_ variant: Variant = .bigText, actions: [String] = ["open", "fewer", "pause"], fewerTopic: String? = "swift")
        -> NotificationPlan
    {
        var plan = GoldenMessageTests.plan(variant)
        plan.actions = actions.map { NotificationAction(id: $0, title: shippedCatalog.localized(for: "en").action($0)) }
        plan.fewerTopic = fewerTopic
        return plan
    }

    static func encoder(replyKeys: ReplyKeys? = keys, interruption: String? = nil) -> NotificationEncoder {
        var configuration = NotificationEncoder.Configuration()
        configuration.iosInterruptionLevel = interruption
        return NotificationEncoder(configuration: configuration, replyKeys: replyKeys)
    }

    static func message(_ platform: Platform, _ encoder: NotificationEncoder = encoder(), plan: NotificationPlan = plan()) -> String {
        let device = Device(token: "tok-\(platform.rawValue)", platform: platform)
        return String(decoding: encoder.message(for: plan, device: device), as: UTF8.self)
    }

    /// The whole FCM bodies with a reply key, `fewer_topic` and `open,fewer,pause`, byte for byte.
    static let golden: [Platform: String] = [
        .android: #"{"message":{"token":"tok-android","android":{"collapse_key":"digest-2026-W47","ttl":"604800s","priority":"normal","data":{"message_id":"33d4848d10fcde4bae516a85e49de560","reply_key":"YNcbIObirHhuzDnv32qcLQ","fewer_topic":"swift","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47","title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros","type":"BigText","picks":"2","actions":"[{\"id\":\"open\",\"title\":\"Read\"},{\"id\":\"fewer\",\"title\":\"Fewer like this\"},{\"id\":\"pause\",\"title\":\"Pause for 4 weeks\"}]"}},"fcm_options":{"analytics_label":"digest-2026-W47-BigText"}}}"#,
        .ios: #"{"message":{"token":"tok-ios","data":{"message_id":"3552dd109f95dc151113148a7e73a006","reply_key":"0bPgVsowP9AlUln8Lh8_Og","fewer_topic":"swift","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"},"apns":{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"},"payload":{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros"},"category":"digest","thread-id":"weekly-digest","mutable-content":1}}},"fcm_options":{"analytics_label":"digest-2026-W47-BigText"}}}"#,
        .web: #"{"message":{"token":"tok-web","data":{"message_id":"ba21beba75510cb741043a94f9e7124e","reply_key":"nePrpekX7bx86c-ciDs8Qg","fewer_topic":"swift","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"},"webpush":{"headers":{"TTL":"604800","Urgency":"normal"},"notification":{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros","actions":[{"action":"fewer","title":"Fewer like this"},{"action":"pause","title":"Pause for 4 weeks"}],"tag":"digest-2026-W47"},"fcm_options":{"link":"https://digest.example/weekly/2026-W47"}},"fcm_options":{"analytics_label":"digest-2026-W47-BigText"}}}"#,
    ]

    @Test(arguments: Platform.allCases)
    func goldenBodiesWithAReplyKey(platform: Platform) throws {
        #expect(Self.message(platform) == Self.golden[platform])
    }

    /// The reply key is the message's own: it verifies for its `message_id` only, under the signing
    /// secret and after a rotation (the old secret second), not under another secret.
    @Test(arguments: Platform.allCases)
    func theReplyKeyVerifiesForItsMessageOnly(platform: Platform) throws {
        let object = try #require(JSONSerialization.jsonObject(with: Data(Self.message(platform).utf8)) as? [String: Any])
        let message = try #require(object["message"] as? [String: Any])
        let data = try #require(
            (platform == .android ? (message["android"] as? [String: Any])?["data"] : message["data"]) as? [String: String])
        let id = try #require(data["message_id"]), key = try #require(data["reply_key"])
        #expect(key.count == ReplyKeys.keyLength && key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(key == Self.keys.sign(messageID: id))
        #expect(Self.keys.verifies(key, messageID: id))
        #expect(!Self.keys.verifies(key, messageID: String(repeating: "0", count: 32)), "another message's")
        let rotated = try ReplyKeys(secrets: ["the-new-secret-that-signs-now", Self.secret])
        #expect(rotated.verifies(key, messageID: id), "the old secret still verifies")
        let forger = try ReplyKeys(secrets: ["somebody-elses-secret"])
        #expect(!forger.verifies(key, messageID: id), "forged")
        #expect(data["fewer_topic"] == "swift")
    }

    /// Every platform's budget grows by exactly the keys' bytes; without reply keys nothing changes.
    @Test(arguments: Variant.allCases)
    func budgetsCountTheReplyKeyAndTheTopic(variant: Variant) {
        let extra = #","reply_key":"0123456789012345678901""#.utf8.count + #","fewer_topic":"swift""#.utf8.count
        let without = Self.encoder(replyKeys: nil).encode(Self.plan(variant, fewerTopic: nil), platforms: Set(Platform.allCases)).bytes
        let with = Self.encoder().encode(Self.plan(variant), platforms: Set(Platform.allCases)).bytes
        for platform in Platform.allCases {
            #expect(with[platform]! - without[platform]! == extra, "\(platform)")
        }
        // What is sent is what was counted: the APNs payload and the Web Push plaintext.
        let plan = Self.plan(variant)
        let apns = APNsEncoder(configuration: .init(topic: nil), encoder: Self.encoder()).message(
            for: plan, device: Device(token: "t", platform: .ios))
        #expect(apns.payload.count == with[.ios])
        #expect(String(decoding: apns.payload, as: UTF8.self).contains(#""reply_key":""#))
    }

    /// The planner's ladder measures the keys: a digest that just fits a budget without them is
    /// shortened to fit it with them, on every platform.
    @Test(arguments: Platform.allCases)
    func theLadderMakesRoomForTheKeys(platform: Platform) throws {
        let digest = PlanFixture.digest(picks: 5)
        let templates = shippedCatalog.localized(for: "en")
        var configuration = VariantPlanner.Configuration()
        configuration.actions = [.open, .fewer, .pause]
        let plain = try VariantPlanner(configuration: configuration).plan(digest, templates: templates, image: nil, platforms: [platform])
        #expect(plain.rules.allSatisfy { !$0.hasPrefix("budget.") })
        configuration.byteBudget = try #require(plain.bytes[platform])
        let keyed = try VariantPlanner(configuration: configuration, encoder: Self.encoder()).plan(
            digest, templates: templates, image: nil, platforms: [platform])
        #expect(keyed.rules.contains { $0.hasPrefix("budget.") }, "\(keyed.rules)")
        #expect(try #require(keyed.bytes[platform]) <= configuration.byteBudget)
        let device = Device(token: "tok", platform: platform)
        let body = Self.encoder().message(for: keyed, device: device)
        #expect(String(decoding: body, as: UTF8.self).contains(#""reply_key":""#))
    }

    /// iOS: the category and interruption level; the web: the first two buttons that are not `open`;
    /// Android: at most three.
    @Test func eachPlatformsButtons() throws {
        let ios = Self.message(.ios, Self.encoder(interruption: "passive"))
        #expect(ios.contains(#""category":"digest","thread-id":"weekly-digest","interruption-level":"passive","mutable-content":1"#))
        #expect(!Self.message(.ios).contains("interruption-level"), "no key by default")
        let all = Self.plan(actions: ["open", "later", "fewer", "pause", "off"])
        let web = Self.message(.web, plan: all)
        #expect(web.contains(#""actions":[{"action":"later","title":"Later"},{"action":"fewer","title":"Fewer like this"}]"#))
        let android = Self.message(.android, plan: all)
        #expect(android.contains(#"\"id\":\"fewer\""#) && !android.contains(#"\"id\":\"pause\""#))
    }

    @Test func buttonTitlesInEveryLocale() {
        let expected: [String: [String]] = [
            "en": ["Fewer like this", "Pause for 4 weeks", "Stop the weekly digest"],
            "ru": ["Меньше подобного", "Пауза на 4 недели", "Отключить еженедельный дайджест"],
            "pl": ["Mniej takich", "Wstrzymaj na 4 tygodnie", "Wyłącz cotygodniowy przegląd"],
            "zh-Hans": ["减少此类推荐", "暂停4周", "停止每周摘要"],
        ]
        for (locale, titles) in expected {
            let templates = shippedCatalog.localized(for: locale)
            #expect(["fewer", "pause", "off"].map(templates.action) == titles, "\(locale)")
            for title in titles {
                #expect(TextRules.clean(title) == title && title.count <= 50, "\(locale): \(title)")
            }
        }
    }

    @Test func actionLists() throws {
        #expect(try NotificationActionID.parse("open,fewer,pause") == [.open, .fewer, .pause])
        #expect(throws: NotificationActionListError.self) { try NotificationActionID.parse("open,nope") }
        #expect(throws: NotificationActionListError.self) { try NotificationActionID.parse("open,open") }
        #expect(throws: NotificationActionListError.self) { try NotificationActionID.parse("") }
        #expect(NotificationActionID.defaults(replyKeys: false) == [.open, .later])
        #expect(NotificationActionID.defaults(replyKeys: true) == [.open, .fewer, .pause])
        #expect(NotificationActionID.allCases.filter(\.needsReplyKey) == [.fewer, .pause, .off])
    }

    /// The planner: `fewer` names the top pick's first topic (in the report too), and is left out of
    /// a digest without picks.
    @Test func thePlannerPutsTheFewerTopic() throws {
        var configuration = VariantPlanner.Configuration()
        configuration.actions = [.open, .fewer, .pause]
        let planner = VariantPlanner(configuration: configuration, encoder: Self.encoder())
        let templates = shippedCatalog.localized(for: "en")
        let plan = try planner.plan(PlanFixture.digest(picks: 3), templates: templates, image: nil, platforms: [.android])
        #expect(plan.actions.map(\.id) == ["open", "fewer", "pause"])
        #expect(plan.fewerTopic == "swift")
        #expect(plan.reportJSON().hasSuffix(#","fewer_topic":"swift"}"#))
        let none = try planner.plan(PlanFixture.digest(picks: 0), templates: templates, image: nil, platforms: [.android])
        #expect(none.actions.map(\.id) == ["open", "pause"])
        #expect(none.fewerTopic == nil && !none.reportJSON().contains("fewer_topic"))
        // Without `fewer` among the buttons, no topic either.
        configuration.actions = [.open, .later]
        let plain = try VariantPlanner(configuration: configuration).plan(
            PlanFixture.digest(picks: 3), templates: templates, image: nil, platforms: [.android])
        #expect(plain.fewerTopic == nil)
    }
}

/// "Fewer like this" in the run, at the fixed instant of ``ReaderPreferencesRunTests``: the reader's
/// Monday 09:00 UTC delivery is due at `due`.
@Suite("Fewer in the run")
struct FewerRunTests {
    typealias Fixture = ReaderPreferencesRunTests
    /// 2026-11-23T09:00Z.
    static let due: Int64 = Fixture.monday + 7 * Fixture.day + 9 * 3600

    static func reader(fewer: [FewerTopic]) -> Reader {
        var preferences = ReaderPreferences()
        preferences.fewer = fewer
        return Fixture.reader(preferences)
    }

    static func composer(attachments: any AttachmentProvider = NoAttachments(), replyKeys: ReplyKeys? = nil) -> BatchComposer {
        var configuration = BatchComposer.Configuration(week: Fixture.week)
        if let replyKeys {
            configuration.replyKeys = replyKeys
            configuration.planner.actions = NotificationActionID.defaults(replyKeys: true)
        }
        return BatchComposer(
            configuration: configuration, articles: Fixture.articles, templates: shippedCatalog, attachments: attachments,
            now: Fixture.now)
    }

    static func topics(_ ids: [String]) -> [String] {
        ids.map { id in Fixture.articles.first { $0.id == id }!.topics[0] }
    }

    @Test func atMostOnePickOfAFewerTopicNeverTheFirst() async throws {
        let plain = await Self.composer().composeUser(Fixture.reader(), history: Fixture.history)
        #expect(Self.topics(Fixture.picks(plain)).filter { $0 == "swift" }.count >= 2, "the Swift reader's picks are Swift ones")
        let fewer = await Self.composer().composeUser(Self.reader(fewer: [FewerTopic(topic: "swift", until: Self.due + 1)]), history: Fixture.history)
        let picks = Fixture.picks(fewer)
        #expect(!picks.isEmpty)
        #expect(Self.topics(picks).first != "swift")
        #expect(Self.topics(picks).filter { $0 == "swift" }.count == 1, "\(picks)")
        // The one kept is the best Swift article, the first of them in the plain ranking.
        #expect(picks.contains(Fixture.picks(plain).first { Self.topics([$0]) == ["swift"] }!))
    }

    /// The previews say which articles "fewer" held back.
    @Test func thePreviewsSayWhatFewerHeldBack() async throws {
        let composer = Self.composer()
        let user = await composer.composeUser(Self.reader(fewer: [FewerTopic(topic: "swift", until: Self.due + 1)]), history: Fixture.history)
        let left = composer.leftOut(user, history: Fixture.history)
        #expect(!left.isEmpty && left.allSatisfy { $0.reason == "fewer: swift" }, "\(left)")
    }

    /// A press that ends at or before the due time no longer holds anything back.
    @Test func anEndedPressChangesNothing() async throws {
        let plain = await Self.composer().composeUser(Fixture.reader(), history: Fixture.history)
        let ended = await Self.composer().composeUser(Self.reader(fewer: [FewerTopic(topic: "swift", until: Self.due)]), history: Fixture.history)
        #expect(Fixture.picks(ended) == Fixture.picks(plain))
    }

    /// The Image variant's picture is the top pick's, never a held-back topic's.
    @Test func theImageIsNeverAFewerTopics() async throws {
        let composer = Self.composer(attachments: Fixture.ReadyImages())
        let user = await composer.composeUser(Self.reader(fewer: [FewerTopic(topic: "swift", until: Self.due + 86_400)]), history: Fixture.history)
        #expect(user.plan?.variant == .image)
        let hero = try #require(user.plan?.image?.hero.url)
        #expect(!hero.contains("swift"), "\(hero)")
    }

    /// With a reply key, every message carries its key and the top pick's topic, and the report the topic.
    @Test func theRunsMessagesCarryTheirReplyKey() async throws {
        let keys = try ReplyKeys(secrets: [ActionButtonsTests.secret])
        let user = await Self.composer(replyKeys: keys).composeUser(Fixture.reader(), history: Fixture.history)
        let message = try #require(user.messages.first)
        let object = try #require(JSONSerialization.jsonObject(with: Data(message.message)) as? [String: Any])
        let data = try #require(((object["message"] as? [String: Any])?["android"] as? [String: Any])?["data"] as? [String: String])
        #expect(data["message_id"] == message.messageID)
        #expect(keys.verifies(try #require(data["reply_key"]), messageID: message.messageID))
        let topic = Self.topics([try #require(user.plan?.picks.first)])[0]
        #expect(data["fewer_topic"] == topic)
        #expect(data["picks"] == String(user.plan!.picks.count))
        #expect(message.report.contains(#""fewer_topic":"\#(topic)""#))
        let actions = try #require(data["actions"])
        #expect(actions.contains(#""id":"fewer","title":"Fewer like this""#) && actions.contains(#""id":"pause""#))
    }
}
