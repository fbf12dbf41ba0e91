import Foundation
import Testing

@testable import DigestCore

/// A week of `articles` read in `minutes` on `days`, top topic `databases`, no previous week, and one
/// pick titled "Pick".
func weekDigest(articles: Int, minutes: Int, days: Int, locale: String) -> WeeklyDigest {
    let reader = Reader(id: "u1", locale: locale, timeZone: "Europe/Warsaw", optedOut: false, devices: [])
    let stats = WeeklyStats(
        articlesRead: articles, minutesRead: minutes, activeDays: days, topTopic: "databases",
        previousArticlesRead: 0, previousMinutesRead: 0)
    let pick = Article(
        id: "a1", title: "Pick", url: "https://news.example/a1", imageURL: nil, topics: ["databases"],
        publishedAt: PlanFixture.window.start, readingMinutes: 3)
    return WeeklyDigest(reader: reader, window: PlanFixture.window, stats: stats, picks: [pick])
}

@Suite("Plural forms by case")
struct CaseFormsTests {
    @Test func templateNamesCarryTheCase() {
        #expect(GrammaticalCase.accusative.name(for: "minutes") == "minutesAccusative")
        #expect(GrammaticalCase.nominative.name(for: "minutes") == "minutes")
        #expect(GrammaticalCase.split("minutesAccusative")?.slot == "minutes")
        #expect(GrammaticalCase.split("minutesAccusative")?.case == .accusative)
        #expect(GrammaticalCase.split("daysPrepositional")?.case == .prepositional)
        for name in ["minutes", "minutesCount", "topTopic", "Accusative", "minutesaccusative", ""] {
            #expect(GrammaticalCase.split(name) == nil, "\(name)")
        }
    }

    @Test func aCaseTheLocaleHasNoFormsForIsTheNominative() {
        let en = shippedCatalog.localized(for: "en")
        #expect(en.plural("minutes", 5, case: .accusative) == "5 min")
        let ru = shippedCatalog.localized(for: "ru")
        #expect(ru.plural("minutes", 21, case: .accusative) == "21 минуту")
        #expect(ru.plural("minutes", 21) == "21 минута")
        #expect(ru.plural("days", 21, case: .accusative) == "21 день")
    }

    @Test func viewModelsGiveEveryCaseByName() {
        let ru = shippedCatalog.localized(for: "ru")
        let digest = weekDigest(articles: 21, minutes: 22, days: 1, locale: "ru")
        let model = DigestViewModel(digest, templates: ru)
        #expect(model.text(named: "articles") == "21 статья")
        #expect(model.text(named: "articlesAccusative") == "21 статью")
        #expect(model.text(named: "minutesAccusative") == "22 минуты")
        #expect(model.child(named: "minutesAccusative") as? String == "22 минуты")
        // No accusative forms for days: the nominative.
        #expect(model.text(named: "daysAccusative") == "1 день")
        #expect(model.text(named: "daysNominative") == "1 день")
        #expect(model.text(named: "weekAccusative") == nil)
        let en = DigestViewModel(digest, templates: shippedCatalog.localized(for: "en"))
        #expect(en.caseForms.isEmpty)
        #expect(en.text(named: "minutesAccusative") == "22 min")
        let bullet = BulletViewModel(title: "T", minutesCount: 1, topic: "", templates: ru)
        #expect(bullet.text(named: "minutesAccusative") == "1 минуту")
        #expect(bullet.text(named: "topic") == nil)
        #expect(MoreViewModel(count: 3, templates: ru).text(named: "moreGenitive") == "Ещё 3 статьи в приложении")
    }

    @Test(arguments: [
        // A case's forms with an unknown category, an unknown case, both shapes at once, no nominative.
        (#"{"plurals": {"minutes": {"nominative": {"one": "{n} минута", "fwe": "{n} минуты"}}}}"#, "'fwe' is not a CLDR plural category"),
        (#"{"plurals": {"minutes": {"nominative": {"one": "a"}, "acusative": {"one": "b"}}}}"#, "'acusative' is not a grammatical case"),
        (#"{"plurals": {"minutes": {"one": "a", "accusative": {"one": "b"}}}}"#, "mixes plural categories and grammatical cases"),
        (#"{"plurals": {"minutes": {"accusative": {"one": "b"}}}}"#, "must include the nominative"),
        (#"{"plurals": {"minutes": {"one": "a", "sevral": "b"}}}"#, "'sevral' is not a CLDR plural category"),
        (#"{"plurals": {"minutes": {"nominative": {}}}}"#, "no forms"),
        (#"{"plurals": {"minutes": ["a"]}}"#, "plurals.minutes"),
    ] as [(String, String)])
    func aBadStringsFileFailsTheLoad(text: String, message: String) throws {
        let copy = try TemplatesCopy()
        try copy.write(text, to: "ru/strings.json")
        let error = try #require(copy.loadError())
        #expect(error.file.hasSuffix("ru/strings.json"))
        #expect(error.message.hasPrefix("invalid strings file"), "\(error)")
        #expect(error.message.contains(message), "\(error)")
    }

    /// A template asking for a case its chain's strings have no forms for would print the nominative:
    /// the load fails instead, naming the template.
    @Test func aTemplateAskingForAMissingCaseFailsTheLoad() throws {
        let copy = try TemplatesCopy()
        // Russian minutes in the nominative alone (the articles keep their accusative).
        let strings = try String(contentsOf: copy.url.appendingPathComponent("ru/strings.json"), encoding: .utf8)
        let start = try #require(strings.range(of: #""minutes": {"#))
        let end = try #require(strings.range(of: #""days":"#))
        try copy.write(
            strings.replacingCharacters(
                in: start.lowerBound..<end.lowerBound,
                with: #""minutes": {"one": "{n} минута", "few": "{n} минуты", "many": "{n} минут", "other": "{n} минуты"},"# + "\n"),
            to: "ru/strings.json")
        let error = try #require(copy.loadError())
        #expect(error.file.hasSuffix("ru/default_body.mustache"))
        #expect(error.message.contains("'{{minutesAccusative}}' asks for 'minutes' in the accusative"), "\(error)")
        #expect(error.message.contains("ru → en"), "\(error)")

        // A regional folder inherits the template and must still find the forms on its chain.
        let regional = try TemplatesCopy()
        try FileManager.default.createDirectory(at: regional.url.appendingPathComponent("ru-RU"), withIntermediateDirectories: true)
        try regional.write(#"{"plurals": {"minutes": {"many": "{n} мин."}}}"#, to: "ru-RU/strings.json")
        let inherited = try #require(regional.loadError())
        #expect(inherited.file.hasSuffix("ru/default_body.mustache"))
        #expect(inherited.message.contains("ru-RU → ru → en"), "\(inherited)")

        let english = try TemplatesCopy()
        try english.write("{{articles}} in {{minutesGenitive}}", to: "en/default_body.mustache")
        let root = try #require(english.loadError())
        #expect(root.message.contains("no genitive forms for 'minutes'"), "\(root)")
    }

    @Test func flatFormsAreTheNominative() throws {
        let copy = try TemplatesCopy()
        try copy.write(
            #"{"plurals": {"days": {"one": "{n} dzionek", "few": "{n} dzionki", "many": "{n} dzionków"}, "weeks": {"nominative": {"few": "{n} tygodnie"}, "genitive": {"few": "{n} tygodni"}}}}"#,
            to: "pl/strings.json")
        // The Polish templates ask for accusative articles and minutes: English has none. (The
        // genitive weeks the multi-week texts ask for are kept.)
        #expect(copy.loadError()?.message.contains("accusative") == true)
        try copy.write(
            "{{#articlesCount}}Twój tydzień: {{articles}}, {{minutes}}{{/articlesCount}}", to: "pl/default_body.mustache")
        let catalog = try TemplateCatalog(directory: copy.url)
        #expect(catalog.localized(for: "pl").plural("days", 3, case: .nominative) == "3 dzionki")
        #expect(catalog.localized(for: "pl").plural("days", 3, case: .accusative) == "3 dzionki")
    }
}
