/// A grammatical case a count phrase can be asked for in: "за 5 минут" needs the accusative where
/// "Ваша неделя: 5 минут" needs the nominative.
///
/// A template reads a count phrase under its plain name (`{{minutes}}`, the nominative) or under the
/// name followed by the case (`{{minutesAccusative}}`); `strings.json` gives the forms per case.
package enum GrammaticalCase: String, Sendable, Hashable, CaseIterable, Codable {
    case nominative, genitive, dative, accusative, instrumental, locative, prepositional, vocative

    /// The suffix a template adds to a count's name: `Accusative`.
    package var suffix: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }

    /// The name a template reads `slot` in this case under: `minutes` → `minutesAccusative`, and
    /// `minutes` itself for the nominative.
    package func name(for slot: String) -> String {
        self == .nominative ? slot : slot + suffix
    }

    /// The count slot and case a template name asks for: `minutesAccusative` → (`minutes`,
    /// accusative); `nil` for a name without a case suffix (`minutes`, `topPick`).
    package static func split(_ name: String) -> (slot: String, case: GrammaticalCase)? {
        // The last capital letter starts the suffix; names are ASCII camel case.
        guard let start = name.lastIndex(where: { $0.isUppercase }), start > name.startIndex else { return nil }
        guard let grammaticalCase = bySuffix[String(name[start...])] else { return nil }
        return (String(name[..<start]), grammaticalCase)
    }

    private static let bySuffix = Dictionary(uniqueKeysWithValues: allCases.map { ($0.suffix, $0) })
}
