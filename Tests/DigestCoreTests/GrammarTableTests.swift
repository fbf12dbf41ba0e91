import Foundation
import Testing

@testable import DigestCore

/// Every shipped template of every shipped locale, rendered for each count slot at the counts where
/// plural forms change, against sentences and word forms written out here by hand: the CLDR category
/// each count must fall in, and the word each count needs in the case its sentence needs ("за 21
/// минуту", "w 2 minuty", but "Ваша неделя: 21 минута").
@Suite("Grammar tables")
struct GrammarTableTests {
    static let counts = [0, 1, 2, 3, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111, 1000]
    /// Every other count slot holds this while one varies.
    static let fixed = 2

    /// The CLDR category of each of ``counts``, by language.
    static let categories: [String: String] = [
        "en": "other one other other other other other other other other other other other other other",
        "pl": "many one few few few many many many many many few many many many many",
        "ru": "many one few few few many many many many one few many one many many",
        "zh": "other other other other other other other other other other other other other other other",
    ]

    /// One count in one case: the phrase around the word (`{n}` the number, `{w}` the word) and the
    /// word for each of ``counts``.
    struct Forms {
        var phrase: String
        var words: [String]

        init(_ phrase: String, _ words: String) {
            self.phrase = phrase
            self.words = words.split(separator: " ").map(String.init)
        }

        init(_ phrase: String, every word: String) {
            self.phrase = phrase
            self.words = Array(repeating: word, count: GrammarTableTests.counts.count)
        }

        func text(_ count: Int) -> String {
            let word = words[GrammarTableTests.counts.firstIndex(of: count)!]
            return phrase.replacingOccurrences(of: "{n}", with: String(count)).replacingOccurrences(of: "{w}", with: word)
        }
    }

    /// Word forms by locale, then `<count>.<case>`.
    static let forms: [String: [String: Forms]] = [
        "en": [
            "articles.nominative": Forms("{n} {w}",
                "articles article articles articles articles articles articles articles articles articles articles articles articles articles articles"),
            "minutes.nominative": Forms("{n} {w}", every: "min"),
            "days.nominative": Forms("{n} {w}", "days day days days days days days days days days days days days days days"),
            "more.nominative": Forms("+{n} more {w} in the app",
                "picks pick picks picks picks picks picks picks picks picks picks picks picks picks picks"),
            "weeks.nominative": Forms("{n} {w}", "weeks week weeks weeks weeks weeks weeks weeks weeks weeks weeks weeks weeks weeks weeks"),
        ],
        "pl": [
            "articles.nominative": Forms("{n} {w}",
                "artykułów artykuł artykuły artykuły artykuły artykułów artykułów artykułów artykułów artykułów artykuły artykułów artykułów artykułów artykułów"),
            // Masculine inanimate: the accusative is the nominative ("Przeczytano 2 artykuły").
            "articles.accusative": Forms("{n} {w}",
                "artykułów artykuł artykuły artykuły artykuły artykułów artykułów artykułów artykułów artykułów artykuły artykułów artykułów artykułów artykułów"),
            "minutes.nominative": Forms("{n} {w}",
                "minut minuta minuty minuty minuty minut minut minut minut minut minuty minut minut minut minut"),
            "minutes.accusative": Forms("{n} {w}",
                "minut minutę minuty minuty minuty minut minut minut minut minut minuty minut minut minut minut"),
            "days.nominative": Forms("{n} {w}", "dni dzień dni dni dni dni dni dni dni dni dni dni dni dni dni"),
            "more.nominative": Forms("Jeszcze {n} {w} w aplikacji",
                "propozycji propozycja propozycje propozycje propozycje propozycji propozycji propozycji propozycji propozycji propozycje propozycji propozycji propozycji propozycji"),
            "weeks.nominative": Forms("{n} {w}",
                "tygodni tydzień tygodnie tygodnie tygodnie tygodni tygodni tygodni tygodni tygodni tygodnie tygodni tygodni tygodni tygodni"),
            // "w ciągu ostatnich 2 tygodni", "wobec poprzednich 2 tygodni".
            "weeks.genitive": Forms("{n} {w}",
                "tygodni tygodnia tygodni tygodni tygodni tygodni tygodni tygodni tygodni tygodni tygodni tygodni tygodni tygodni tygodni"),
        ],
        "ru": [
            "articles.nominative": Forms("{n} {w}",
                "статей статья статьи статьи статьи статей статей статей статей статья статьи статей статья статей статей"),
            "articles.accusative": Forms("{n} {w}",
                "статей статью статьи статьи статьи статей статей статей статей статью статьи статей статью статей статей"),
            "minutes.nominative": Forms("{n} {w}",
                "минут минута минуты минуты минуты минут минут минут минут минута минуты минут минута минут минут"),
            "minutes.accusative": Forms("{n} {w}",
                "минут минуту минуты минуты минуты минут минут минут минут минуту минуты минут минуту минут минут"),
            "days.nominative": Forms("{n} {w}", "дней день дня дня дня дней дней дней дней день дня дней день дней дней"),
            "more.nominative": Forms("Ещё {n} {w} в приложении",
                "статей статья статьи статьи статьи статей статей статей статей статья статьи статей статья статей статей"),
            "weeks.nominative": Forms("{n} {w}",
                "недель неделя недели недели недели недель недель недель недель неделя недели недель неделя недель недель"),
            // "за эти 2 недели".
            "weeks.accusative": Forms("{n} {w}",
                "недель неделю недели недели недели недель недель недель недель неделю недели недель неделю недель недель"),
            // "к предыдущим 2 неделям".
            "weeks.dative": Forms("{n} {w}",
                "неделям неделе неделям неделям неделям неделям неделям неделям неделям неделе неделям неделям неделе неделям неделям"),
        ],
        "zh-Hans": [
            "articles.nominative": Forms("{n}{w}", every: "篇文章"),
            "minutes.nominative": Forms("{n}{w}", every: "分钟"),
            "days.nominative": Forms("{n}{w}", every: "天"),
            "more.nominative": Forms("应用内还有{n}{w}", every: "篇推荐"),
            "weeks.nominative": Forms("{n}{w}", every: "周"),
        ],
    ]

    /// What each template must print, by locale: `{articles}` is the nominative phrase,
    /// `{minutes.accusative}` the accusative one. The top pick is "Pick", the top topic `databases`
    /// (shown by its name), and there is no change against the previous week.
    static let sentences: [String: [TemplateCatalog.Piece: String]] = [
        "en": [
            .title: "Your week: {articles}, {minutes}",
            .defaultBody: "You read {articles} in {minutes}. Next up: Pick",
            .header: "{days} active · top topic: databases",
            .imageBody: "Top pick: Pick",
            .reengageTitle: "New stories are waiting for you",
            .reengageBody: "Catch up this week: Pick",
            .bullet: "• Pick",
            .more: "{more}",
        ],
        "pl": [
            .title: "Twój tydzień: {articles}, {minutes}",
            .defaultBody: "Przeczytano {articles.accusative} w {minutes.accusative}. Na później: Pick",
            .header: "Aktywność: {days} · temat tygodnia: bazy danych",
            .imageBody: "Polecamy: Pick",
            .reengageTitle: "Czekają na Ciebie nowe artykuły",
            .reengageBody: "Nadrób zaległości: Pick",
            .bullet: "• Pick",
            .more: "{more}",
        ],
        "ru": [
            .title: "Ваша неделя: {articles}, {minutes}",
            .defaultBody: "Вы прочитали {articles.accusative} за {minutes.accusative}. Дальше: Pick",
            .header: "Активность: {days} · главная тема: базы данных",
            .imageBody: "Советуем: Pick",
            .reengageTitle: "Вас ждут новые статьи",
            .reengageBody: "Наверстайте: Pick",
            .bullet: "• Pick",
            .more: "{more}",
        ],
        "zh-Hans": [
            .title: "本周阅读：{articles}，{minutes}",
            .defaultBody: "本周你读了{articles}，共{minutes}。推荐：Pick",
            .header: "活跃{days} · 热门主题：数据库",
            .imageBody: "精选：Pick",
            .reengageTitle: "新文章等你来读",
            .reengageBody: "本周推荐：Pick",
            .bullet: "• Pick",
            .more: "{more}",
        ],
    ]

    /// What each template prints for a digest of several weeks (a reader's pace: `{weeks}` is 2 or 4),
    /// where it differs from the weekly sentence.
    static let multiWeekSentences: [String: [TemplateCatalog.Piece: String]] = [
        "en": [
            .title: "In these {weeks}: {articles}, {minutes}",
            .reengageBody: "Catch up on these {weeks}: Pick",
        ],
        "pl": [
            .title: "Ostatnie {weeks}: {articles}, {minutes}",
            .header: "Aktywność: {days} · główny temat: bazy danych",
        ],
        "ru": [
            .title: "За эти {weeks.accusative}: {articles}, {minutes}",
        ],
        "zh-Hans": [
            .title: "这{weeks}：{articles}，{minutes}",
            .defaultBody: "这{weeks}你读了{articles}，共{minutes}。推荐：Pick",
            .reengageBody: "这{weeks}推荐：Pick",
        ],
    ]

    static let locales = ["en", "pl", "ru", "zh-Hans"]

    /// The sentence with every `{slot}` / `{slot.case}` replaced by its phrase for `values[slot]`.
    static func expected(_ sentence: String, locale: String, values: [String: Int]) throws -> String {
        var text = sentence
        while let open = text.firstIndex(of: "{") {
            let close = try #require(text[open...].firstIndex(of: "}"))
            let key = String(text[text.index(after: open)..<close])
            let parts = key.split(separator: ".").map(String.init)
            let slot = parts[0]
            let grammaticalCase = parts.count > 1 ? parts[1] : "nominative"
            let forms = try #require(Self.forms[locale]?["\(slot).\(grammaticalCase)"], "no table for \(locale) \(key)")
            text.replaceSubrange(open...close, with: forms.text(try #require(values[slot])))
        }
        return text
    }

    /// The table itself: each count's category is CLDR's, and a word changes only with the category
    /// (two counts of one category never take different words in one case).
    @Test(arguments: locales)
    func tablesFollowTheCLDRCategories(locale: String) throws {
        let language = LocaleChain.language(of: locale)
        let categories = try #require(Self.categories[language]).split(separator: " ").map(String.init)
        #expect(categories.count == Self.counts.count)
        for (index, count) in Self.counts.enumerated() {
            #expect(PluralRules.category(of: count, language: language).rawValue == categories[index], "\(locale) \(count)")
        }
        for (key, forms) in try #require(Self.forms[locale]) {
            #expect(forms.words.count == Self.counts.count, "\(locale) \(key)")
            var wordByCategory: [String: String] = [:]
            for (index, word) in forms.words.enumerated() {
                let first = wordByCategory[categories[index], default: word]
                #expect(first == word, "\(locale) \(key): '\(word)' for \(Self.counts[index]), '\(first)' earlier in '\(categories[index])'")
                wordByCategory[categories[index]] = first
            }
        }
    }

    /// Each phrase from the locale's strings, in each case, is the table's.
    @Test(arguments: locales)
    func pluralPhrasesMatchTheTable(locale: String) throws {
        let templates = shippedCatalog.localized(for: locale)
        for (key, forms) in try #require(Self.forms[locale]) {
            let parts = key.split(separator: ".").map(String.init)
            let grammaticalCase = try #require(GrammaticalCase(rawValue: parts[1]))
            for count in Self.counts {
                #expect(templates.plural(parts[0], count, case: grammaticalCase) == forms.text(count), "\(locale) \(key) \(count)")
            }
        }
    }

    /// A digest of 2 and of 4 weeks: every template, each count slot at every count, is the table's
    /// multi-week sentence (the weekly one where the template says nothing of the weeks).
    @Test(arguments: locales)
    func everyTemplateOfSeveralWeeks(locale: String) throws {
        let templates = shippedCatalog.localized(for: locale)
        let weekly = try #require(Self.sentences[locale])
        let sentences = weekly.merging(try #require(Self.multiWeekSentences[locale])) { _, multi in multi }
        for weeks in [2, 4] {
            for slot in ["articles", "minutes", "days"] {
                for count in Self.counts {
                    var values = ["articles": Self.fixed, "minutes": Self.fixed, "days": Self.fixed, "more": Self.fixed, "weeks": weeks]
                    values[slot] = count
                    let week = weekDigest(articles: values["articles"]!, minutes: values["minutes"]!, days: values["days"]!, locale: locale)
                    let digest = WeeklyDigest(reader: week.reader, window: week.window, stats: week.stats, picks: week.picks, coveredWeeks: weeks)
                    let model = DigestViewModel(digest, templates: templates)
                    if values["articles"]! > 0 && values["minutes"] == 0 { values["minutes"] = 1 }
                    for piece in TemplateCatalog.Piece.allCases where piece != .bullet && piece != .more {
                        let expected = try Self.expected(try #require(sentences[piece]), locale: locale, values: values)
                        #expect(templates.render(piece, model) == expected, "\(locale)/\(piece.rawValue) over \(weeks) weeks with \(slot) = \(count)")
                    }
                }
            }
        }
    }

    /// Every template, each count slot at every count (the other slots at 2): the whole sentence is
    /// the table's, so each phrase has the category's word in the sentence's case.
    @Test(arguments: locales)
    func everyTemplateAtEveryCount(locale: String) throws {
        let templates = shippedCatalog.localized(for: locale)
        let sentences = try #require(Self.sentences[locale])
        #expect(Set(sentences.keys) == Set(TemplateCatalog.Piece.allCases))
        for slot in ["articles", "minutes", "days", "more"] {
            for count in Self.counts {
                var values = ["articles": Self.fixed, "minutes": Self.fixed, "days": Self.fixed, "more": Self.fixed]
                values[slot] = count
                let model = DigestViewModel(
                    weekDigest(articles: values["articles"]!, minutes: values["minutes"]!, days: values["days"]!, locale: locale),
                    templates: templates)
                // A week with an article read shows at least 1 minute.
                if values["articles"]! > 0 && values["minutes"] == 0 { values["minutes"] = 1 }
                for piece in TemplateCatalog.Piece.allCases {
                    let rendered: String
                    switch piece {
                    case .bullet:
                        rendered = templates.render(
                            piece, BulletViewModel(title: "Pick", minutesCount: values["minutes"]!, topic: "databases", templates: templates))
                    case .more:
                        rendered = templates.render(piece, MoreViewModel(count: values["more"]!, templates: templates))
                    default:
                        rendered = templates.render(piece, model)
                    }
                    // (A week without reads gets the re-engagement title; the title still renders.)
                    let sentence = try #require(sentences[piece])
                    let expected = try Self.expected(sentence, locale: locale, values: values)
                    #expect(rendered == expected, "\(locale)/\(piece.rawValue) with \(slot) = \(count)")
                }
            }
        }
    }
}
