import DigestCore
import Foundation
import Testing

/// Renders are cached by the values of the names a template reads: different values must never
/// share a result, and a template with partials or the implicit iterator is never cached wrongly.
@Suite struct TemplateRenderCacheTests {
    static let templates = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Templates")

    func model(articles: Int, minutes: Int, topTopic: String = "", change: String = "", topPick: String = "") -> DigestViewModel {
        DigestViewModel(
            week: "2026-W46", articles: "\(articles) articles", articlesCount: articles, minutes: "\(minutes) min",
            minutesCount: minutes, days: "3 days", daysCount: 3, topTopic: topTopic, change: change, topPick: topPick,
            picksCount: 2)
    }

    @Test func cachedRendersFollowEveryValueTheTemplateReads() throws {
        let localized = try TemplateCatalog(directory: Self.templates).localized(for: "en")
        let first = localized.render(.title, model(articles: 3, minutes: 20))
        #expect(first == "Your week: 3 articles, 20 min")
        #expect(localized.render(.title, model(articles: 3, minutes: 20, topPick: "other")) == first)
        #expect(localized.render(.title, model(articles: 4, minutes: 20)) == "Your week: 4 articles, 20 min")
        #expect(localized.render(.header, model(articles: 1, minutes: 1)) == "3 days active")
        #expect(localized.render(.header, model(articles: 1, minutes: 1, topTopic: "swift", change: "+5%"))
            == "3 days active · top topic: swift · +5% vs last week")
        #expect(localized.render(.header, model(articles: 1, minutes: 1, topTopic: "swift")) == "3 days active · top topic: swift")
    }

    @Test func templatesWithPartialsOrIteratorsStillRenderPerModel() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("digest-templates-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(at: Self.templates, to: dir)
        try "{{#week}}{{.}}{{/week}}: {{articles}}".write(
            to: dir.appendingPathComponent("en/title.mustache"), atomically: true, encoding: .utf8)
        let localized = try TemplateCatalog(directory: dir).localized(for: "en")
        #expect(localized.render(.title, model(articles: 1, minutes: 1)) == "2026-W46: 1 articles")
        #expect(localized.render(.title, model(articles: 2, minutes: 1)) == "2026-W46: 2 articles")
    }
}
