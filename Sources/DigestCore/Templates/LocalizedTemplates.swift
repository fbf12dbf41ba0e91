package import Mustache
import Foundation
import Synchronization

/// The templates, plural forms, labels and topic names one user's locale resolved to.
public struct LocalizedTemplates: Sendable {
    /// The locale the user asked for.
    public let requested: String
    /// The most specific locale folder found on the chain.
    public let resolved: String
    /// The language whose plural rules apply.
    public let language: String
    /// `true` when the user's language has no folder and the root locale was used.
    public let fellBackToRoot: Bool
    let pieces: [TemplateCatalog.Piece: CompiledTemplate]
    /// Each count's forms by grammatical case (the nominative always) and CLDR category.
    let plurals: [String: [GrammaticalCase: [PluralCategory: String]]]
    /// Action labels (`open`, `later`).
    package let actions: [String: String]
    /// Topic display names by slug, from the `topics.json` files of the locale chain (the most
    /// specific name wins).
    package let topics: [String: String]
    /// Rendered text by piece and the values of the names the piece uses: many users share a title
    /// or a header, and rendering is the costly part.
    let renders = RenderCache()
    /// ``language``'s plural rule, found once.
    let pluralRule: PluralRules.Rule
    /// The count phrases of every category and case for the counts a week shows, made once.
    let phrases: PhraseTable

    init(
        requested: String, resolved: String, language: String, fellBackToRoot: Bool,
        pieces: [TemplateCatalog.Piece: CompiledTemplate], plurals: [String: [GrammaticalCase: [PluralCategory: String]]],
        actions: [String: String], topics: [String: String]
    ) {
        self.requested = requested
        self.resolved = resolved
        self.language = language
        self.fellBackToRoot = fellBackToRoot
        self.pieces = pieces
        self.plurals = plurals
        self.actions = actions
        self.topics = topics
        pluralRule = PluralRules.Rule(language: language)
        phrases = PhraseTable(plurals: plurals, rule: pluralRule)
    }

    /// Renders one piece from a view model.
    package func render(_ piece: TemplateCatalog.Piece, _ model: some MustacheParent & TemplateValues) -> String {
        guard let compiled = pieces[piece] else { return "" }
        if let text = compiled.text { return text.render(model) }
        guard let names = compiled.names else { return compiled.template.render(model) }
        var key = piece.rawValue
        for name in names {
            key.append("\u{1}")
            if let value = model.child(named: name) { key.append(String(describing: value)) }
        }
        if let hit = renders.value(for: key) { return hit }
        let text = compiled.template.render(model)
        renders.store(text, for: key)
        return text
    }

    /// The plural phrase for `count` of `category` (`articles`, `minutes`, `days`, `more`) in a
    /// grammatical case: the nominative forms when the locale gives none for that case.
    package func plural(_ category: String, _ count: Int, case grammaticalCase: GrammaticalCase = .nominative) -> String {
        if let phrase = phrases.phrase(category, count, grammaticalCase) { return phrase }
        return Self.plural(category, count, case: grammaticalCase, plurals: plurals, rule: pluralRule)
    }

    /// The phrase as ``plural(_:_:case:)`` gives it, made from the forms.
    static func plural(
        _ category: String, _ count: Int, case grammaticalCase: GrammaticalCase,
        plurals: [String: [GrammaticalCase: [PluralCategory: String]]], rule: PluralRules.Rule
    ) -> String {
        let plural = rule.category(of: count)
        guard let cases = plurals[category], let forms = cases[grammaticalCase] ?? cases[.nominative],
            let form = forms[plural] ?? forms[.other] ?? forms.values.first
        else {
            return String(count)
        }
        return form.replacingPlaceholder(with: String(count))
    }

    /// The phrases for `count` of `category` in every case other than the nominative that the locale
    /// gives forms for, by the name a template reads them under (`minutesAccusative`).
    func casePhrases(_ category: String, _ count: Int, into phrases: inout [String: String]) {
        guard let entries = self.phrases.otherCases[category] else { return }
        for entry in entries {
            phrases[entry.name] = entry.phrase(count) ?? plural(category, count, case: entry.grammaticalCase)
        }
    }

    /// The display name of a topic slug, or `nil` when no locale on the chain names it.
    package func topicName(_ slug: String) -> String? { topics[slug] }

    /// What a template shows for a topic slug: its display name, else the slug as written.
    package func topic(_ slug: String) -> String { topics[slug] ?? slug }

    /// Whether a piece's template reads `name` (a template whose names cannot be listed, one with
    /// partials for instance, counts as reading every name).
    package func reads(_ name: String, in piece: TemplateCatalog.Piece) -> Bool {
        guard let compiled = pieces[piece] else { return false }
        return compiled.names?.contains(name) ?? true
    }

    /// An action's label, or its key when no locale names it.
    package func action(_ key: String) -> String { actions[key] ?? key }
}

/// Every category's count phrases, in each case the locale gives forms for, for the counts below
/// ``size`` (a week's articles, minutes, days and picks): made once per locale, so a digest's
/// phrases are looked up rather than formatted.
final class PhraseTable: Sendable {
    static let size = 512

    struct Entry: Sendable {
        /// The name a template reads the phrase under (`minutesAccusative`).
        let name: String
        let grammaticalCase: GrammaticalCase
        let phrases: [String]

        func phrase(_ count: Int) -> String? { count >= 0 && count < phrases.count ? phrases[count] : nil }
    }

    /// Per category, the nominative's phrases.
    let nominative: [String: [String]]
    /// Per category with forms in other cases, those cases (in a fixed order).
    let otherCases: [String: [Entry]]

    init(plurals: [String: [GrammaticalCase: [PluralCategory: String]]], rule: PluralRules.Rule) {
        var nominative: [String: [String]] = [:]
        var otherCases: [String: [Entry]] = [:]
        for (category, cases) in plurals {
            func phrases(_ grammaticalCase: GrammaticalCase) -> [String] {
                (0..<Self.size).map {
                    LocalizedTemplates.plural(category, $0, case: grammaticalCase, plurals: plurals, rule: rule)
                }
            }
            nominative[category] = phrases(.nominative)
            guard cases.count > 1 else { continue }
            otherCases[category] = GrammaticalCase.allCases.filter { $0 != .nominative && cases[$0] != nil }.map {
                Entry(name: $0.name(for: category), grammaticalCase: $0, phrases: phrases($0))
            }
        }
        self.nominative = nominative
        self.otherCases = otherCases
    }

    /// The phrase of `count` in the table, `nil` when it is not there (a count out of range, a case
    /// without forms, a category without any).
    func phrase(_ category: String, _ count: Int, _ grammaticalCase: GrammaticalCase) -> String? {
        guard count >= 0 && count < Self.size else { return nil }
        if grammaticalCase == .nominative { return nominative[category]?[count] }
        return otherCases[category]?.first { $0.grammaticalCase == grammaticalCase }?.phrases[count]
    }
}

extension String {
    /// The form with its first `{n}` replaced by `value`.
    fileprivate func replacingPlaceholder(with value: String) -> String {
        let utf8 = self.utf8
        var index = utf8.startIndex
        while index != utf8.endIndex {
            // `{` is ASCII, so the index is a character boundary and the slices below are whole text.
            if utf8[index] == UInt8(ascii: "{"), utf8[index...].starts(with: "{n}".utf8) {
                return String(self[..<index]) + value + String(self[utf8.index(index, offsetBy: 3)...])
            }
            utf8.formIndex(after: &index)
        }
        return self
    }
}

/// A parsed template with the top-level names it reads (`nil` when it uses partials, delimiter
/// changes or the implicit iterator, whose output cannot be keyed by names alone).
struct CompiledTemplate: Sendable {
    let template: MustacheTemplate
    let names: [String]?
    /// The same template without the library, when it is simple enough (most are).
    let text: TextTemplate?

    init(source: String) throws {
        template = try MustacheTemplate(string: "{{%CONTENT_TYPE:TEXT}}" + source)
        names = Self.names(in: source)
        text = TextTemplate(source: source)
    }

    static func names(in source: String) -> [String]? {
        var names = Set<String>()
        var rest = Substring(source)
        while let open = rest.range(of: "{{") {
            guard let close = rest[open.upperBound...].range(of: "}}") else { return nil }
            var tag = rest[open.upperBound..<close.lowerBound]
            rest = rest[close.upperBound...]
            if tag.first == "{" {
                tag = tag.dropFirst()
                if rest.first == "}" { rest = rest.dropFirst() }
            }
            guard let sigil = tag.first else { return nil }
            switch sigil {
            case "!", "%": continue
            case ">", "<", "=", "$": return nil
            case "#", "^", "/", "&": tag = tag.dropFirst()
            default: break
            }
            let name = tag.trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name != "." else { return nil }
            names.insert(String(name.split(separator: ".").first ?? Substring(name)))
        }
        return names.sorted()
    }
}

/// Bounded render results shared by every task that uses the same locale.
final class RenderCache: Sendable {
    private let entries = Mutex<[String: String]>([:])
    // Small enough that a few thousand users fill it: memory is then the same at 100k users as at 1M.
    private let limit = 2_048

    func value(for key: String) -> String? { entries.withLock { $0[key] } }

    func store(_ text: String, for key: String) {
        entries.withLock { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = text
        }
    }
}
