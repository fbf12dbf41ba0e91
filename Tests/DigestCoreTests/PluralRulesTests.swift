import Foundation
import Testing

@testable import DigestCore

/// The package's shipped `Templates/` folder: this file is `<root>/Tests/DigestCoreTests/<file>`.
let templatesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Templates")

/// The shipped templates, loaded once for every suite.
let shippedCatalog: TemplateCatalog = {
    do { return try TemplateCatalog(directory: templatesDirectory) } catch {
        fatalError("cannot load \(templatesDirectory.path): \(error)")
    }
}()

@Suite("CLDR plural categories")
struct PluralCategoryTests {
    static let counts = [0, 1, 2, 3, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111, 112, 122, 1001]

    @Test(arguments: zip(counts, [
        "other", "one", "other", "other", "other", "other", "other", "other", "other", "other", "other", "other",
        "other", "other", "other", "other", "other",
    ]))
    func english(count: Int, expected: String) {
        #expect(PluralRules.category(of: count, language: "en").rawValue == expected)
    }

    @Test(arguments: zip(counts, [
        "many", "one", "few", "few", "few", "many", "many", "many", "many", "many", "few", "many",
        "many", "many", "many", "few", "many",
    ]))
    func polish(count: Int, expected: String) {
        #expect(PluralRules.category(of: count, language: "pl").rawValue == expected)
    }

    @Test(arguments: zip(counts, [
        "many", "one", "few", "few", "few", "many", "many", "many", "many", "one", "few", "many",
        "one", "many", "many", "few", "one",
    ]))
    func russian(count: Int, expected: String) {
        #expect(PluralRules.category(of: count, language: "ru").rawValue == expected)
    }

    @Test(arguments: counts)
    func chinese(count: Int) {
        #expect(PluralRules.category(of: count, language: "zh") == .other)
    }

    @Test func languageIsCaseInsensitive() {
        #expect(PluralRules.category(of: 3, language: "PL") == .few)
        #expect(PluralRules.category(of: 21, language: "Ru") == .one)
    }
}

@Suite("Shipped plural strings")
struct ShippedPluralTests {
    @Test(arguments: [
        ("pl-PL", 0, "0 artykułów"), ("pl-PL", 1, "1 artykuł"), ("pl-PL", 2, "2 artykuły"),
        ("pl-PL", 5, "5 artykułów"), ("pl-PL", 12, "12 artykułów"), ("pl-PL", 22, "22 artykuły"),
        ("pl", 112, "112 artykułów"),
        ("ru-RU", 1, "1 статья"), ("ru-RU", 3, "3 статьи"), ("ru-RU", 11, "11 статей"),
        ("ru-RU", 21, "21 статья"), ("ru", 0, "0 статей"), ("ru", 112, "112 статей"),
        ("en-US", 1, "1 article"), ("en", 0, "0 articles"), ("en-GB", 2, "2 articles"),
        ("zh-CN", 1, "1篇文章"), ("zh-Hans", 5, "5篇文章"),
    ] as [(String, Int, String)])
    func articles(locale: String, count: Int, expected: String) {
        #expect(shippedCatalog.localized(for: locale).plural("articles", count) == expected)
    }

    @Test func otherCategories() {
        let pl = shippedCatalog.localized(for: "pl-PL")
        #expect(pl.plural("minutes", 1) == "1 minuta")
        #expect(pl.plural("minutes", 24) == "24 minuty")
        #expect(pl.plural("days", 5) == "5 dni")
        #expect(pl.plural("more", 3) == "Jeszcze 3 propozycje w aplikacji")
        let ru = shippedCatalog.localized(for: "ru")
        #expect(ru.plural("days", 2) == "2 дня")
        #expect(ru.plural("more", 5) == "Ещё 5 статей в приложении")
        // A category no locale names falls back to the bare number.
        #expect(pl.plural("nonexistent", 7) == "7")
    }

    @Test func actionsAreLocalized() {
        #expect(shippedCatalog.localized(for: "pl-PL").action("open") == "Czytaj")
        #expect(shippedCatalog.localized(for: "ru").action("later") == "Позже")
        #expect(shippedCatalog.localized(for: "xx-YY").action("open") == "Read")
        #expect(shippedCatalog.localized(for: "en").action("share") == "share")
    }

    @Test func shippedLocales() {
        #expect(Set(shippedCatalog.locales).isSuperset(of: ["en", "pl", "ru", "zh-Hans"]))
    }

    @Test func valuesAreInsertedLiterally() {
        let en = shippedCatalog.localized(for: "en")
        let bullet = en.render(.bullet, BulletViewModel(title: "{{title}} & <b>\"x\"</b>", minutes: "", topic: ""))
        #expect(bullet == "• {{title}} & <b>\"x\"</b>")
    }
}

@Suite("Locale fallback")
struct LocaleChainTests {
    @Test(arguments: [
        ("pl-PL", ["pl-PL", "pl", "en"]),
        ("pl_PL.UTF-8", ["pl-PL", "pl", "en"]),
        ("en-US", ["en-US", "en"]),
        ("en", ["en"]),
        ("zh-CN", ["zh-CN", "zh-Hans", "zh", "en"]),
        ("zh-Hans-CN", ["zh-Hans-CN", "zh-Hans", "zh", "en"]),
        ("zh-TW", ["zh-TW", "zh", "en"]),
        ("zh-Hant-HK", ["zh-Hant-HK", "zh-Hant", "zh", "en"]),
        ("xx-YY", ["xx-YY", "xx", "en"]),
        ("", ["en"]),
    ] as [(String, [String])])
    func chain(locale: String, expected: [String]) {
        #expect(LocaleChain.chain(for: locale) == expected)
    }

    @Test(arguments: [
        ("pl-PL", "pl", "pl", false),
        ("pl", "pl", "pl", false),
        ("ru-RU", "ru", "ru", false),
        ("zh-CN", "zh-Hans", "zh", false),
        ("zh_CN", "zh-Hans", "zh", false),
        ("en-GB", "en", "en", false),
        ("xx-YY", "en", "en", true),
        ("de-DE", "en", "en", true),
    ] as [(String, String, String, Bool)])
    func resolution(locale: String, resolved: String, language: String, fellBack: Bool) {
        let templates = shippedCatalog.localized(for: locale)
        #expect(templates.requested == locale)
        #expect(templates.resolved == resolved)
        #expect(templates.language == language)
        #expect(templates.fellBackToRoot == fellBack)
    }

    @Test func unknownLocaleUsesEnglishPlurals() {
        let templates = shippedCatalog.localized(for: "xx-YY")
        #expect(templates.plural("articles", 1) == "1 article")
        #expect(templates.plural("articles", 3) == "3 articles")
    }

    @Test func badDirectoryIsReported() {
        #expect(throws: TemplateError.self) {
            try TemplateCatalog(directory: templatesDirectory.appendingPathComponent("no-such-folder"))
        }
    }
}
