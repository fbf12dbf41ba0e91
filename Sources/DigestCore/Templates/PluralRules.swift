/// CLDR plural categories.
public enum PluralCategory: String, Sendable, Hashable, CaseIterable, Codable {
    case zero, one, two, few, many, other
}

/// CLDR cardinal plural rules for whole numbers, per language.
///
/// Shipped languages are exact (en, pl, ru, zh); others of the same family share a rule, and any other
/// language uses `other` alone.
public enum PluralRules {
    /// The category of `count` in `language` (a BCP 47 language subtag such as `pl`).
    public static func category(of count: Int, language: String) -> PluralCategory {
        let n = abs(count)
        let mod10 = n % 10
        let mod100 = n % 100
        switch language.lowercased() {
        case "en", "de", "nl", "sv", "da", "nb", "no", "it", "es", "el", "fi", "et", "hu", "tr", "bg":
            return n == 1 ? .one : .other
        case "pl":
            if n == 1 { return .one }
            if (2...4).contains(mod10) && !(12...14).contains(mod100) { return .few }
            return .many
        case "ru", "uk", "be":
            if mod10 == 1 && mod100 != 11 { return .one }
            if (2...4).contains(mod10) && !(12...14).contains(mod100) { return .few }
            return .many
        case "cs", "sk":
            if n == 1 { return .one }
            if (2...4).contains(n) { return .few }
            return .other
        case "fr", "pt":
            return n <= 1 ? .one : .other
        default:
            return .other
        }
    }
}
