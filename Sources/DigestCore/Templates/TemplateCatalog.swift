public import Foundation
import Mustache
import Synchronization

/// The Mustache templates and plural strings of every locale under a `Templates/` directory.
///
/// Each piece resolves along the locale chain (`pl-PL` → `pl` → `en`), so a regional folder may
/// override one file and inherit the rest. Templates render as plain text: values are inserted as they
/// are, and Mustache markup inside a value is never interpreted.
public final class TemplateCatalog: Sendable {
    /// The template files every locale chain must end up providing (the root locale has them all).
    public enum Piece: String, Sendable, CaseIterable {
        case title
        case header
        case bullet
        case more
        case imageBody = "image_body"
        case defaultBody = "default_body"
        case reengageTitle = "reengage_title"
        case reengageBody = "reengage_body"
    }

    /// The strings file of a locale: plural forms (`{n}` stands for the number) and action labels.
    struct Strings: Decodable {
        var plurals: [String: PluralEntry]?
        var actions: [String: String]?
    }

    /// One count's plural forms: CLDR category → form (the nominative alone), or grammatical case →
    /// (CLDR category → form), which must give the nominative.
    ///
    /// ```json
    /// "days": {"one": "{n} день", "few": "{n} дня", "many": "{n} дней", "other": "{n} дня"},
    /// "minutes": {
    ///   "nominative": {"one": "{n} минута", "few": "{n} минуты", "many": "{n} минут", "other": "{n} минуты"},
    ///   "accusative": {"one": "{n} минуту", "few": "{n} минуты", "many": "{n} минут", "other": "{n} минуты"}
    /// }
    /// ```
    struct PluralEntry: Decodable {
        var cases: [GrammaticalCase: [PluralCategory: String]]

        private enum Value: Decodable {
            case form(String)
            case forms([String: String])

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let form = try? container.decode(String.self) {
                    self = .form(form)
                } else if let forms = try? container.decode([String: String].self) {
                    self = .forms(forms)
                } else {
                    throw DecodingError.dataCorruptedError(
                        in: container, debugDescription: "expected a form (a string) or a case's forms (an object of strings)")
                }
            }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let entry = try container.decode([String: Value].self)
            func fail(_ message: String) -> DecodingError {
                DecodingError.dataCorruptedError(in: container, debugDescription: message)
            }
            func categories(_ forms: [String: String]) throws(DecodingError) -> [PluralCategory: String] {
                var mapped: [PluralCategory: String] = [:]
                for (key, form) in forms {
                    guard let category = PluralCategory(rawValue: key) else {
                        let known = PluralCategory.allCases.map(\.rawValue).joined(separator: ", ")
                        throw fail("'\(key)' is not a CLDR plural category (\(known))")
                    }
                    mapped[category] = form
                }
                guard !mapped.isEmpty else { throw fail("no forms") }
                return mapped
            }
            var flat: [String: String] = [:]
            var cased: [GrammaticalCase: [PluralCategory: String]] = [:]
            for (key, value) in entry {
                switch value {
                case .form(let form): flat[key] = form
                case .forms(let forms):
                    guard let grammaticalCase = GrammaticalCase(rawValue: key) else {
                        let known = GrammaticalCase.allCases.map(\.rawValue).joined(separator: ", ")
                        throw fail("'\(key)' is not a grammatical case (\(known))")
                    }
                    cased[grammaticalCase] = try categories(forms)
                }
            }
            switch (flat.isEmpty, cased.isEmpty) {
            case (false, false):
                throw fail("mixes plural categories and grammatical cases: give either forms by category or forms by case")
            case (false, true):
                cases = [.nominative: try categories(flat)]
            case (true, false):
                guard cased[.nominative] != nil else { throw fail("forms by case must include the nominative") }
                cases = cased
            case (true, true):
                throw fail("no forms")
            }
        }
    }

    public let directory: URL
    private let templates: [String: [Piece: CompiledTemplate]]
    private let strings: [String: Strings]
    /// Topic display names by slug, per locale folder (`topics.json`).
    private let topics: [String: [String: String]]
    private let localeNames: [String: String]  // lowercased → as on disk
    private let resolved = Mutex<[String: LocalizedTemplates]>([:])

    /// Loads every locale folder under `directory`; fails naming the file and line of a bad template,
    /// a bad `strings.json` or `topics.json`, or a template asking for a count in a case no strings
    /// file on its locale chain gives forms for.
    public init(directory: URL) throws(TemplateError) {
        self.directory = directory
        let fm = FileManager.default
        guard let entries = try? fm.contentsOfDirectory(atPath: directory.path) else {
            throw TemplateError(file: directory.path, message: "templates directory cannot be read")
        }
        var templates: [String: [Piece: CompiledTemplate]] = [:]
        var strings: [String: Strings] = [:]
        var topics: [String: [String: String]] = [:]
        var names: [String: String] = [:]
        for locale in entries.sorted() {
            let folder = directory.appendingPathComponent(locale)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            names[locale.lowercased()] = locale
            var pieces: [Piece: CompiledTemplate] = [:]
            for piece in Piece.allCases {
                let file = folder.appendingPathComponent(piece.rawValue + ".mustache")
                guard let data = fm.contents(atPath: file.path) else { continue }
                guard let text = String(data: data, encoding: .utf8) else {
                    throw TemplateError(file: file.path, message: "not UTF-8")
                }
                do {
                    pieces[piece] = try CompiledTemplate(source: text)
                } catch let error as MustacheTemplate.ParserError {
                    throw TemplateError(
                        file: file.path, line: error.context.lineNumber, column: error.context.columnNumber,
                        message: "\(error.error)")
                } catch {
                    throw TemplateError(file: file.path, message: "\(error)")
                }
            }
            templates[locale] = pieces
            let stringsFile = folder.appendingPathComponent("strings.json")
            if let data = fm.contents(atPath: stringsFile.path) {
                do {
                    strings[locale] = try JSONDecoder().decode(Strings.self, from: data)
                } catch {
                    throw TemplateError(file: stringsFile.path, message: "invalid strings file: \(Self.describe(error))")
                }
            }
            let topicsFile = folder.appendingPathComponent("topics.json")
            if let data = fm.contents(atPath: topicsFile.path) {
                let decoded: [String: String]
                do {
                    decoded = try JSONDecoder().decode([String: String].self, from: data)
                } catch {
                    throw TemplateError(
                        file: topicsFile.path,
                        message: "invalid topics file (an object of topic slug → display name): \(Self.describe(error))")
                }
                for (slug, name) in decoded.sorted(by: { $0.key < $1.key })
                where slug.isEmpty || name.allSatisfy({ $0.isWhitespace || $0.isNewline }) {
                    throw TemplateError(file: topicsFile.path, message: "invalid topics file: empty slug or name ('\(slug)')")
                }
                topics[locale] = decoded
            }
        }
        guard let root = templates[LocaleChain.root] else {
            throw TemplateError(file: directory.path, message: "no '\(LocaleChain.root)' locale folder")
        }
        for piece in Piece.allCases where root[piece] == nil {
            throw TemplateError(
                file: directory.appendingPathComponent("\(LocaleChain.root)/\(piece.rawValue).mustache").path,
                message: "missing: the root locale must provide every template")
        }
        for category in ["articles", "minutes", "days", "more"] where strings[LocaleChain.root]?.plurals?[category] == nil {
            throw TemplateError(
                file: directory.appendingPathComponent("\(LocaleChain.root)/strings.json").path,
                message: "missing plural forms for '\(category)'")
        }
        if topics[LocaleChain.root] == nil {
            throw TemplateError(
                file: directory.appendingPathComponent("\(LocaleChain.root)/topics.json").path,
                message: "missing: the root locale must provide topic names (an object of topic slug → display name)")
        }
        self.templates = templates
        self.strings = strings
        self.topics = topics
        self.localeNames = names
        for locale in templates.keys.sorted() { try checkCases(of: locale) }
    }

    /// Fails when a template of `locale`'s chain asks for a count in a case (`{{minutesAccusative}}`)
    /// that no strings file on the chain gives forms for: the phrase would silently be the nominative.
    private func checkCases(of locale: String) throws(TemplateError) {
        let chain = self.chain(for: locale)
        let plurals = Self.plurals(along: chain, strings)
        for piece in Piece.allCases {
            guard let owner = chain.first(where: { templates[$0]?[piece] != nil }),
                let names = templates[owner]?[piece]?.names
            else { continue }
            for name in names {
                guard let (slot, grammaticalCase) = GrammaticalCase.split(name), plurals[slot]?[grammaticalCase] == nil
                else { continue }
                let missing = plurals[slot] == nil ? "no plural forms for '\(slot)'" : "no \(grammaticalCase) forms for '\(slot)'"
                throw TemplateError(
                    file: directory.appendingPathComponent("\(owner)/\(piece.rawValue).mustache").path,
                    message: "'{{\(name)}}' asks for '\(slot)' in the \(grammaticalCase), but the strings.json files of "
                        + "\(chain.joined(separator: " → ")) have \(missing)")
            }
        }
    }

    /// The locale folders on `locale`'s fallback chain, most specific first.
    private func chain(for locale: String) -> [String] {
        LocaleChain.chain(for: locale).compactMap { localeNames[$0.lowercased()] }
    }

    /// Each count's forms from the most specific strings file on `chain` that has the count.
    private static func plurals(
        along chain: [String], _ strings: [String: Strings]
    ) -> [String: [GrammaticalCase: [PluralCategory: String]]] {
        var plurals: [String: [GrammaticalCase: [PluralCategory: String]]] = [:]
        for name in chain.reversed() {
            for (category, entry) in strings[name]?.plurals ?? [:] { plurals[category] = entry.cases }
        }
        return plurals
    }

    /// A decoding error as one line: where in the file, and what is wrong.
    private static func describe(_ error: any Error) -> String {
        let context: DecodingError.Context
        switch error as? DecodingError {
        case .dataCorrupted(let c)?, .keyNotFound(_, let c)?, .typeMismatch(_, let c)?, .valueNotFound(_, let c)?:
            context = c
        default:
            return "\(error)"
        }
        var path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        if path.isEmpty { path = "top level" }
        var text = "at \(path): \(context.debugDescription)"
        if let underlying = context.underlyingError { text += " (\(underlying))" }
        return text
    }

    /// The locales that have a folder.
    public var locales: [String] { templates.keys.sorted() }

    /// The templates for a user's locale, resolved along its fallback chain and cached.
    public func localized(for locale: String) -> LocalizedTemplates {
        if let hit = resolved.withLock({ $0[locale] }) { return hit }
        let chain = self.chain(for: locale)
        var pieces: [Piece: CompiledTemplate] = [:]
        for piece in Piece.allCases {
            pieces[piece] = chain.lazy.compactMap { self.templates[$0]?[piece] }.first
        }
        let plurals = Self.plurals(along: chain, strings)
        var actions: [String: String] = [:]
        var topicNames: [String: String] = [:]
        for name in chain.reversed() {
            actions.merge(strings[name]?.actions ?? [:]) { _, new in new }
            topicNames.merge(topics[name] ?? [:]) { _, new in new }
        }
        let best = chain.first ?? LocaleChain.root
        let language = LocaleChain.language(of: best)
        let value = LocalizedTemplates(
            requested: locale, resolved: best, language: language,
            fellBackToRoot: best == LocaleChain.root && LocaleChain.language(of: locale) != LocaleChain.root,
            pieces: pieces, plurals: plurals, actions: actions, topics: topicNames)
        resolved.withLock { $0[locale] = value }
        return value
    }
}

/// Why templates could not be loaded, with the file (and line) at fault.
public struct TemplateError: Error, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let column: Int?
    public let message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String {
        var location = file
        if let line { location += ":\(line)" }
        if let column { location += ":\(column)" }
        return "\(location): \(message)"
    }
}
