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
        var plurals: [String: [String: String]]?
        var actions: [String: String]?
    }

    public let directory: URL
    private let templates: [String: [Piece: CompiledTemplate]]
    private let strings: [String: Strings]
    private let localeNames: [String: String]  // lowercased → as on disk
    private let resolved = Mutex<[String: LocalizedTemplates]>([:])

    /// Loads every locale folder under `directory`; fails naming the file and line of a bad template.
    public init(directory: URL) throws(TemplateError) {
        self.directory = directory
        let fm = FileManager.default
        guard let entries = try? fm.contentsOfDirectory(atPath: directory.path) else {
            throw TemplateError(file: directory.path, message: "templates directory cannot be read")
        }
        var templates: [String: [Piece: CompiledTemplate]] = [:]
        var strings: [String: Strings] = [:]
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
                    throw TemplateError(file: stringsFile.path, message: "invalid strings file: \(error)")
                }
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
        self.templates = templates
        self.strings = strings
        self.localeNames = names
    }

    /// The locales that have a folder.
    public var locales: [String] { templates.keys.sorted() }

    /// The templates for a user's locale, resolved along its fallback chain and cached.
    public func localized(for locale: String) -> LocalizedTemplates {
        if let hit = resolved.withLock({ $0[locale] }) { return hit }
        let chain = LocaleChain.chain(for: locale).compactMap { localeNames[$0.lowercased()] }
        var pieces: [Piece: CompiledTemplate] = [:]
        for piece in Piece.allCases {
            pieces[piece] = chain.lazy.compactMap { self.templates[$0]?[piece] }.first
        }
        var plurals: [String: [PluralCategory: String]] = [:]
        var actions: [String: String] = [:]
        for name in chain.reversed() {
            for (category, forms) in strings[name]?.plurals ?? [:] {
                var mapped: [PluralCategory: String] = [:]
                for (key, form) in forms {
                    if let plural = PluralCategory(rawValue: key) { mapped[plural] = form }
                }
                plurals[category] = mapped
            }
            actions.merge(strings[name]?.actions ?? [:]) { _, new in new }
        }
        let best = chain.first ?? LocaleChain.root
        let language = LocaleChain.language(of: best)
        let value = LocalizedTemplates(
            requested: locale, resolved: best, language: language,
            fellBackToRoot: best == LocaleChain.root && LocaleChain.language(of: locale) != LocaleChain.root,
            pieces: pieces, plurals: plurals, actions: actions)
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
