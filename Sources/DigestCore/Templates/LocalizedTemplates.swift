public import Mustache
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
    public let actions: [String: String]
    /// Topic display names by slug, from the `topics.json` files of the locale chain (the most
    /// specific name wins).
    public let topics: [String: String]
    /// Rendered text by piece and the values of the names the piece uses: many users share a title
    /// or a header, and rendering is the costly part.
    let renders = RenderCache()

    /// Renders one piece from a view model.
    public func render(_ piece: TemplateCatalog.Piece, _ model: some MustacheParent & TemplateValues) -> String {
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
    public func plural(_ category: String, _ count: Int, case grammaticalCase: GrammaticalCase = .nominative) -> String {
        let plural = PluralRules.category(of: count, language: language)
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
        guard let cases = plurals[category], cases.count > 1 else { return }
        for grammaticalCase in cases.keys where grammaticalCase != .nominative {
            phrases[grammaticalCase.name(for: category)] = plural(category, count, case: grammaticalCase)
        }
    }

    /// The display name of a topic slug, or `nil` when no locale on the chain names it.
    public func topicName(_ slug: String) -> String? { topics[slug] }

    /// What a template shows for a topic slug: its display name, else the slug as written.
    public func topic(_ slug: String) -> String { topics[slug] ?? slug }

    /// Whether a piece's template reads `name` (a template whose names cannot be listed, one with
    /// partials for instance, counts as reading every name).
    public func reads(_ name: String, in piece: TemplateCatalog.Piece) -> Bool {
        guard let compiled = pieces[piece] else { return false }
        return compiled.names?.contains(name) ?? true
    }

    /// An action's label, or its key when no locale names it.
    public func action(_ key: String) -> String { actions[key] ?? key }
}

extension String {
    /// The form with its first `{n}` replaced by `value`.
    fileprivate func replacingPlaceholder(with value: String) -> String {
        var utf8 = self.utf8[...]
        var prefix: [UInt8] = []
        while let byte = utf8.first {
            if byte == UInt8(ascii: "{"), utf8.starts(with: "{n}".utf8) {
                return String(decoding: prefix, as: UTF8.self) + value + String(decoding: utf8.dropFirst(3), as: UTF8.self)
            }
            prefix.append(byte)
            utf8 = utf8.dropFirst()
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
