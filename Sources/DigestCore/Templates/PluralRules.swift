/// CLDR plural categories.
package enum PluralCategory: String, Sendable, Hashable, CaseIterable, Codable {
    case zero, one, two, few, many, other
}

/// CLDR cardinal plural rules for whole numbers, per language.
///
/// Shipped languages are exact (en, pl, ru, zh); others of the same family share a rule, and any other
/// language uses `other` alone.
package enum PluralRules {
    /// The category of `count` in `language` (a BCP 47 language subtag such as `pl`).
    package static func category(of count: Int, language: String) -> PluralCategory {
        Rule(language: language).category(of: count)
    }

    /// A language's rule, found once (``LocalizedTemplates`` keeps its language's).
    package enum Rule: Sendable, Hashable {
        /// `one` for 1, else `other` (en, de, …).
        case oneOther
        /// pl: one, few, many.
        case polish
        /// ru, uk, be: one, few, many.
        case eastSlavic
        /// cs, sk: one, few, other.
        case czech
        /// fr, pt: `one` for 0 and 1.
        case french
        /// Every count is `other` (zh, ja, and any language without a rule here).
        case otherOnly

        package init(language: String) {
            switch language.lowercased() {
            case "en", "de", "nl", "sv", "da", "nb", "no", "it", "es", "el", "fi", "et", "hu", "tr", "bg": self = .oneOther
            case "pl": self = .polish
            case "ru", "uk", "be": self = .eastSlavic
            case "cs", "sk": self = .czech
            case "fr", "pt": self = .french
            default: self = .otherOnly
            }
        }

        /// The category of `count` under this rule.
        package func category(of count: Int) -> PluralCategory {
            let n = abs(count)
            let mod10 = n % 10
            let mod100 = n % 100
            switch self {
            case .oneOther:
                return n == 1 ? .one : .other
            case .polish:
                if n == 1 { return .one }
                if (2...4).contains(mod10) && !(12...14).contains(mod100) { return .few }
                return .many
            case .eastSlavic:
                if mod10 == 1 && mod100 != 11 { return .one }
                if (2...4).contains(mod10) && !(12...14).contains(mod100) { return .few }
                return .many
            case .czech:
                if n == 1 { return .one }
                if (2...4).contains(n) { return .few }
                return .other
            case .french:
                return n <= 1 ? .one : .other
            case .otherOnly:
                return .other
            }
        }
    }
}
