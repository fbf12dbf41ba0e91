/// BCP 47 language tags as the digest compares them: by their primary language subtag, so that
/// `zh-Hans` matches `zh` and `pl-PL` matches `pl`.
public enum LanguageTag {
    /// The lowercased primary subtag of a tag or locale (`zh-Hans` → `zh`, `pt_BR` → `pt`), or `nil`
    /// when it is not 2 to 8 ASCII letters (`und`, the undetermined language, is `nil` too).
    public static func primary(_ tag: String) -> String? {
        var primary = ""
        for unit in tag.utf8 {
            if unit == UInt8(ascii: "-") || unit == UInt8(ascii: "_") { break }
            guard (unit | 0x20) >= UInt8(ascii: "a"), (unit | 0x20) <= UInt8(ascii: "z") else { return nil }
            primary.unicodeScalars.append(Unicode.Scalar(unit | 0x20))
        }
        guard (2...8).contains(primary.utf8.count), primary != "und" else { return nil }
        return primary
    }

    /// Whether `tag` is a well-formed tag as `articles.jsonl` takes it: a primary subtag of 2 to 8
    /// letters, then subtags of 1 to 8 letters or digits, separated by `-`.
    public static func isWellFormed(_ tag: String) -> Bool {
        let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = subtags.first, (2...8).contains(first.utf8.count),
            first.utf8.allSatisfy({ ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") })
        else { return false }
        return subtags.dropFirst().allSatisfy { subtag in
            (1...8).contains(subtag.utf8.count)
                && subtag.utf8.allSatisfy {
                    (($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z"))
                        || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                }
        }
    }
}
