import Foundation

/// The text rules every string of a notification obeys (docs/007-rules-and-limits.md).
///
/// Lengths count grapheme clusters, so an emoji ZWJ sequence, a flag or a letter with combining marks
/// is one character and is never split.
package enum TextRules {
    /// The ellipsis appended to a cut string.
    package static let ellipsis: Character = "…"

    /// NFC, control characters removed, whitespace collapsed to single spaces and trimmed.
    /// With `keepNewlines`, line breaks survive as single `\n` (no blank lines, no spaces around them).
    package static func clean(_ text: String, keepNewlines: Bool = false) -> String {
        if isPlainASCII(text) || isClean(text) { return text }
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        var pendingNewline = false
        var mayNeedNFC = false
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if !isPlain(value) {
                switch value {
                case 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029:
                    if keepNewlines { pendingNewline = true } else { pendingSpace = true }
                    continue
                default:
                    break
                }
                // Whitespace first: a tab is both a control character and a space, and becomes a space.
                if value == 0x20 || scalar.properties.isWhitespace {
                    pendingSpace = true
                    continue
                }
                if value < 0x20 || scalar.properties.generalCategory == .control { continue }
                mayNeedNFC = true
            }
            if !out.isEmpty {
                if pendingNewline {
                    out.append("\n")
                } else if pendingSpace {
                    out.append(" ")
                }
            }
            pendingSpace = false
            pendingNewline = false
            out.append(scalar)
        }
        let cleaned = String(out)
        // Composition never makes or removes spaces or controls, so it can come last.
        return mayNeedNFC ? cleaned.precomposedStringWithCanonicalMapping : cleaned
    }

    /// Scalars that are neither whitespace nor controls and are unchanged by NFC in any context
    /// (no combining marks, no singletons): printable ASCII, Latin-1 and Latin Extended letters,
    /// Cyrillic letters, general punctuation, the minus sign (a week's change, `−12%`), CJK ideographs
    /// and punctuation, full-width forms, emoji.
    /// Anything else takes the slow path with Unicode properties and normalization.
    @inline(__always)
    static func isPlain(_ value: UInt32) -> Bool {
        switch value {
        case 0x21..<0x7F, 0xA1..<0x300, 0x400..<0x483, 0x48A..<0x530, 0x2010..<0x2028, 0x2030..<0x205F,
            0x3001..<0x302A, 0x3030..<0x3099, 0x30A0..<0x3100, 0x4E00..<0xA000, 0xFF01..<0xFF5F,
            0x200D, 0x2212, 0xFE0F, 0x1F1E6...0x1F1FF, 0x1F300..<0x1FB00:
            return true
        default:
            return false
        }
    }

    /// Printable ASCII with no leading, trailing or doubled spaces needs no work.
    private static func isPlainASCII(_ text: String) -> Bool {
        var previousSpace = true
        for byte in text.utf8 {
            guard byte >= 0x20, byte < 0x7F else { return false }
            let space = byte == 0x20
            if space && previousSpace { return false }
            previousSpace = space
        }
        return !previousSpace || text.isEmpty
    }

    /// Text of plain scalars (``isPlain(_:)``) and single inner spaces is its own cleaned form.
    private static func isClean(_ text: String) -> Bool {
        var previousSpace = true
        for scalar in text.unicodeScalars {
            if scalar.value == 0x20 {
                if previousSpace { return false }
                previousSpace = true
            } else if isPlain(scalar.value) {
                previousSpace = false
            } else {
                return false
            }
        }
        return !previousSpace || text.isEmpty
    }

    /// Cuts `text` to at most `limit` grapheme clusters, the ellipsis included.
    ///
    /// The cut falls at the last word boundary inside the limit when that keeps at least 60% of the
    /// limit, else at a grapheme boundary; trailing spaces and punctuation go before the ellipsis.
    /// Returns the text unchanged (and `false`) when it fits.
    package static func truncate(_ text: String, to limit: Int) -> (text: String, cut: Bool) {
        guard limit > 0 else { return ("", !text.isEmpty) }
        // Graphemes never outnumber scalars, nor scalars UTF-8 bytes: a text with few enough of either
        // fits without a walk (the byte count of a native string is known without decoding it).
        if text.utf8.count <= limit || text.unicodeScalars.count <= limit { return (text, false) }
        // Find the end of the first `limit - 1` characters, and whether more than `limit` exist.
        var index = text.startIndex
        var count = 0
        var keepEnd = text.startIndex
        var lastSpace: (index: String.Index, count: Int)?
        while index < text.endIndex, count <= limit {
            if count == limit - 1 { keepEnd = index }
            let character = text[index]
            if count < limit - 1, isWhitespace(character) { lastSpace = (index, count) }
            count += 1
            index = text.index(after: index)
        }
        if count <= limit && index == text.endIndex { return (text, false) }
        if limit == 1 { return (String(ellipsis), true) }

        var end = keepEnd
        let nextIsSpace = text[keepEnd].isWhitespace
        if !nextIsSpace, let space = lastSpace, space.count * 10 >= limit * 6 {
            end = space.index
        }
        var kept = text[..<end]
        while let last = kept.last, last.isWhitespace || last.isPunctuation {
            kept = kept.dropLast()
        }
        return (kept + String(ellipsis), true)
    }

    /// `Character.isWhitespace` (White_Space of the first scalar) without the Unicode property lookup
    /// for a character starting with ASCII: there only tab to carriage return and the space are.
    @inline(__always)
    static func isWhitespace(_ character: Character) -> Bool {
        if let first = character.utf8.first, first < 0x80 { return (0x09...0x0D).contains(first) || first == 0x20 }
        return character.isWhitespace
    }

    /// Cuts `text` so that it fits in `maxUnits` UTF-16 code units (Android's framework cap), by the
    /// same rule as ``truncate(_:to:)`` at the largest grapheme limit that fits.
    package static func truncate(_ text: String, toUTF16 maxUnits: Int) -> (text: String, cut: Bool) {
        if utf16Count(text) <= maxUnits { return (text, false) }
        var low = 0
        var high = min(text.count, maxUnits)
        while low < high {
            let mid = (low + high + 1) / 2
            if utf16Count(truncate(text, to: mid).text) <= maxUnits { low = mid } else { high = mid - 1 }
        }
        return (truncate(text, to: low).text, true)
    }

    /// The UTF-16 code units of `text` (Android's unit), counted on its UTF-8 bytes: every scalar
    /// is one unit but those of four bytes, two. `String.utf16.count` of a non-ASCII native string
    /// builds and keeps an index table (breadcrumbs) first, a cost for each reader's new body.
    package static func utf16Count(_ text: String) -> Int {
        var text = text
        return text.withUTF8 { bytes in
            var units = 0
            for byte in bytes where byte & 0xC0 != 0x80 { units &+= byte >= 0xF0 ? 2 : 1 }
            return units
        }
    }

    /// Whether `text` has at least `units` UTF-16 code units: never with fewer UTF-8 bytes (no scalar
    /// has more units than bytes), so most texts are answered by their byte count, without a walk.
    package static func utf16Count(of text: String, reaches units: Int) -> Bool {
        text.utf8.count >= units && utf16Count(text) >= units
    }

    /// Grapheme clusters in `text`.
    package static func length(_ text: String) -> Int { text.count }
}
