public import Mustache

/// The templates, plural forms and labels one user's locale resolved to.
public struct LocalizedTemplates: Sendable {
    /// The locale the user asked for.
    public let requested: String
    /// The most specific locale folder found on the chain.
    public let resolved: String
    /// The language whose plural rules apply.
    public let language: String
    /// `true` when the user's language has no folder and the root locale was used.
    public let fellBackToRoot: Bool
    let pieces: [TemplateCatalog.Piece: MustacheTemplate]
    let plurals: [String: [PluralCategory: String]]
    /// Action labels (`open`, `later`).
    public let actions: [String: String]

    /// Renders one piece from a view model.
    public func render(_ piece: TemplateCatalog.Piece, _ model: some MustacheParent) -> String {
        guard let template = pieces[piece] else { return "" }
        return template.render(model)
    }

    /// The plural phrase for `count` of `category` (`articles`, `minutes`, `days`, `more`).
    public func plural(_ category: String, _ count: Int) -> String {
        let plural = PluralRules.category(of: count, language: language)
        guard let forms = plurals[category], let form = forms[plural] ?? forms[.other] ?? forms.values.first else {
            return String(count)
        }
        return form.replacingPlaceholder(with: String(count))
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
