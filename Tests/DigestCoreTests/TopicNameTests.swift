import DigestDemo
import Foundation
import Testing

@testable import DigestCore

@Suite("Topic names")
struct TopicNameTests {
    static let shippedLocales = ["en", "pl", "ru", "zh-Hans"]

    /// Each shipped locale names every demo topic in its own `topics.json` (not through the
    /// fallback to English), and the catalog shows that name.
    @Test(arguments: shippedLocales)
    func everyDemoTopicHasANameInEveryShippedLocale(locale: String) throws {
        let file = templatesDirectory.appendingPathComponent("\(locale)/topics.json")
        let names = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: file))
        let templates = shippedCatalog.localized(for: locale)
        for slug in DemoVocabulary.topics {
            let name = try #require(names[slug], "\(locale)/topics.json has no name for '\(slug)'")
            #expect(!name.isEmpty)
            #expect(templates.topicName(slug) == name)
            #expect(templates.topic(slug) == name)
        }
        // Outside English a common noun is not its English slug.
        if locale != "en" {
            #expect(names["databases"] != "databases")
        }
    }

    @Test(arguments: [
        ("pl-PL", "temat tygodnia: bazy danych"), ("ru-RU", "главная тема: базы данных"),
        ("zh-CN", "热门主题：数据库"), ("en-GB", "top topic: databases"), ("xx-YY", "top topic: databases"),
    ] as [(String, String)])
    func theHeaderShowsTheName(locale: String, expected: String) throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 3, locale: locale, topTopic: "databases"))
        #expect(plan.variant == .bigText)
        #expect(plan.body.split(separator: "\n")[0].contains(expected), "\(plan.body)")
        #expect(!plan.rules.contains { $0.hasPrefix("topics.untranslated") })
    }

    @Test func aTopicWithoutANameShowsItsSlugAndRecordsTheRule() throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 3, locale: "pl-PL", topTopic: "quantum-computing"))
        #expect(plan.body.hasPrefix("Aktywność: 2 dni · temat tygodnia: quantum-computing"), "\(plan.body)")
        #expect(plan.rules == ["topics.untranslated:quantum-computing"])
        // Counted in the run report by its name.
        var counters = RunCounters()
        for rule in plan.rules { counters.rules[String(rule.prefix { $0 != ":" }), default: 0] += 1 }
        #expect(counters.rules == ["topics.untranslated": 1])
        #expect(PlanRule(rawValue: "topics.untranslated") == .topicsUntranslated)
    }

    /// Only a text that shows the topic records it: the default body and the title do not.
    @Test func anUnshownTopicRecordsNothing() throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: 1, topTopic: "quantum-computing"), platforms: [.android])
        #expect(plan.variant == .defaultText)
        #expect(!plan.body.contains("quantum"))
        #expect(plan.rules.isEmpty)
    }

    @Test func aBulletTopicWithoutANameRecordsTheRule() throws {
        let copy = try TemplatesCopy()
        try copy.write("• {{title}}{{#topic}} ({{topic}}){{/topic}}", to: "en/bullet.mustache")
        let templates = try TemplateCatalog(directory: copy.url).localized(for: "en")
        var digest = PlanFixture.digest(picks: 2)
        var picks = digest.picks
        picks[1].topics = ["knitting", "swift"]
        digest = WeeklyDigest(reader: digest.reader, window: digest.window, stats: digest.stats, picks: picks)
        let plan = try VariantPlanner().plan(digest, templates: templates, image: nil, platforms: [.android])
        #expect(plan.body.hasSuffix("• Swift 6 migration guide (Swift)\n• Actors in practice (knitting)"), "\(plan.body)")
        #expect(plan.rules == ["topics.untranslated:knitting"])
    }

    /// A regional folder may name a topic differently; a locale without `topics.json` inherits its
    /// chain's names.
    @Test func namesFollowTheLocaleChain() throws {
        let copy = try TemplatesCopy()
        try FileManager.default.createDirectory(at: copy.url.appendingPathComponent("pl-PL"), withIntermediateDirectories: true)
        try copy.write(#"{"football": "futbol"}"#, to: "pl-PL/topics.json")
        try copy.remove("ru/topics.json")
        let catalog = try TemplateCatalog(directory: copy.url)
        #expect(catalog.localized(for: "pl-PL").topic("football") == "futbol")
        #expect(catalog.localized(for: "pl-PL").topic("databases") == "bazy danych")
        #expect(catalog.localized(for: "pl").topic("football") == "piłka nożna")
        #expect(catalog.localized(for: "ru").topic("databases") == "databases")
        #expect(catalog.localized(for: "ru").topic("swift") == "Swift")
        #expect(catalog.localized(for: "ru").topicName("no-such-topic") == nil)
    }

    @Test(arguments: [
        ("pl/topics.json", #"["swift", "linux"]"#),
        ("pl/topics.json", #"{"swift": "Swift""#),
        ("pl/topics.json", #"{"swift": 1}"#),
        ("ru/topics.json", #"{"swift": ""}"#),
        ("en/topics.json", #"{"": "Nothing"}"#),
    ] as [(String, String)])
    func aBadTopicsFileFailsTheLoad(file: String, text: String) throws {
        let copy = try TemplatesCopy()
        try copy.write(text, to: file)
        let error = try #require(copy.loadError())
        #expect(error.file.hasSuffix(file))
        #expect(error.message.hasPrefix("invalid topics file"), "\(error)")
    }

    @Test func theRootLocaleMustNameTopics() throws {
        let copy = try TemplatesCopy()
        try copy.remove("en/topics.json")
        let error = try #require(copy.loadError())
        #expect(error.file.hasSuffix("en/topics.json"))
        #expect(error.message.hasPrefix("missing"), "\(error)")
    }
}
