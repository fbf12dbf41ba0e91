import Foundation
import Mustache
import Testing

@testable import DigestCore

/// ``TextTemplate`` renders simple templates without the Mustache library: it must print exactly
/// what the library prints, and leave to the library every template it does not fully understand.
@Suite struct TextTemplateTests {
    /// Models with every optional value present and absent, counts of 0 and more.
    static let models: [DigestViewModel] = {
        var models: [DigestViewModel] = []
        for (count, topic, change, pick) in [
            (0, "", "", ""), (1, "swift", "+5%", "Top story"), (7, "книги", "", "专访：越来越多的团队"),
            (12, "", "−3%", ""),
        ] {
            models.append(
                DigestViewModel(
                    week: "2026-W46", articles: "\(count) articles", articlesCount: count, minutes: "\(count * 3) min",
                    minutesCount: count * 3, days: "\(count % 7) days", daysCount: count % 7, topTopic: topic,
                    change: change, topPick: pick, picksCount: count % 6,
                    caseForms: count == 7 ? ["articlesAccusative": "7 статей", "minutesAccusative": "21 минуту"] : [:]))
        }
        return models
    }()

    static let bullets = [
        BulletViewModel(title: "A title", minutes: "4 min", topic: "books"),
        BulletViewModel(title: "Ещё {{title}}", minutes: "1 мин", topic: ""),
    ]

    @Test func everyShippedTemplateTakesTheFastPathAndPrintsWhatMustachePrints() throws {
        let catalog = try TemplateCatalog(directory: templatesDirectory)
        var checked = 0
        for locale in catalog.locales {
            let localized = catalog.localized(for: locale)
            for piece in TemplateCatalog.Piece.allCases {
                let compiled = try #require(localized.pieces[piece])
                let text = try #require(compiled.text, "\(locale)/\(piece.rawValue) needs the library")
                switch piece {
                case .bullet:
                    for model in Self.bullets {
                        #expect(text.render(model) == compiled.template.render(model), "\(locale)/\(piece.rawValue)")
                        checked += 1
                    }
                case .more:
                    for count in [1, 2, 5, 22] {
                        let model = MoreViewModel(more: localized.plural("more", count), count: count)
                        #expect(text.render(model) == compiled.template.render(model), "\(locale)/\(piece.rawValue)")
                        checked += 1
                    }
                default:
                    for model in Self.models {
                        #expect(text.render(model) == compiled.template.render(model), "\(locale)/\(piece.rawValue)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked >= 4 * 8 * 2)
    }

    @Test(arguments: [
        "plain text, no tags",
        "{{ articles }}|{{{minutes}}}|{{& days}}|{{missing}}|{{articlesCount}}",
        "{{#topTopic}}[{{topTopic}}]{{/topTopic}}{{^topTopic}}(none){{/topTopic}} {{! a comment }}end",
        "{{#articlesCount}}n={{articlesCount}} {{#topPick}}<{{topPick}}>{{/topPick}}{{/articlesCount}}",
        "{{#missing}}never{{/missing}}{{^missing}}always{{/missing}}",
        "  {{#change}}{{change}}{{/change}}  ",
        "{{#week}}{{#week}}nested {{week}}{{/week}}{{/week}}",
    ])
    func simpleTemplatesPrintWhatMustachePrints(source: String) throws {
        let text = try #require(TextTemplate(source: source))
        let template = try MustacheTemplate(string: "{{%CONTENT_TYPE:TEXT}}" + source)
        for model in Self.models {
            #expect(text.render(model) == template.render(model))
        }
    }

    @Test(arguments: [
        "{{> partial}}", "{{#week}}{{.}}{{/week}}", "{{week.first}}", "{{uppercased(week)}}", "{{=<% %>=}}<%week%>",
        "line one\n{{week}}", "{{%CONTENT_TYPE:HTML}}{{week}}", "{{$block}}x{{/block}}", "  {{! only a comment }}  ",
        "{{#week}}unclosed", "{{#week}}x{{/days}}", "{{/week}}", "{{week",
    ])
    func anythingElseIsLeftToTheLibrary(source: String) {
        #expect(TextTemplate(source: source) == nil)
    }

    @Test func renderedValuesAreNeverReadAsMarkup() throws {
        let text = try #require(TextTemplate(source: "• {{title}}"))
        #expect(text.render(Self.bullets[1]) == "• Ещё {{title}}")
    }
}
