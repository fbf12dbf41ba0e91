/// Locale fallback: `pl-PL` → `pl` → `en`; Chinese in the simplified script resolves to `zh-Hans`.
package enum LocaleChain {
    /// The locale every chain ends with.
    package static let root = "en"

    /// Candidate locale names, most specific first, ending with ``root``.
    package static func chain(for locale: String) -> [String] {
        let tag = locale.replacingUnderscores().trimmedTag()
        var parts = tag.split(separator: "-").map(String.init)
        var chain: [String] = []
        if parts.first?.lowercased() == "zh" {
            let traditional = parts.contains { ["hant", "tw", "hk", "mo"].contains($0.lowercased()) }
            if !traditional {
                chain.append(tag)
                chain.append("zh-Hans")
                chain.append("zh")
                parts = []
            }
        }
        while !parts.isEmpty {
            chain.append(parts.joined(separator: "-"))
            parts.removeLast()
        }
        chain.append(root)
        var seen = Set<String>()
        return chain.filter { !$0.isEmpty && seen.insert($0.lowercased()).inserted }
    }

    /// The language subtag (`pl` of `pl-PL`), lowercased.
    package static func language(of locale: String) -> String {
        let tag = locale.replacingUnderscores().trimmedTag()
        return String(tag.split(separator: "-").first ?? "").lowercased()
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        String(self.map { $0 == "_" ? "-" : $0 })
    }

    fileprivate func trimmedTag() -> String {
        // Drop POSIX extras such as `.UTF-8` and `@euro`.
        let cut = self.split(whereSeparator: { $0 == "." || $0 == "@" }).first.map(String.init) ?? ""
        return cut.trimmingSpaces()
    }

    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
