import Foundation

/// The text rules every string of a notification obeys (DESIGN.md, "Text rules").
///
/// Lengths count grapheme clusters, so an emoji ZWJ sequence, a flag or a letter with combining marks
/// is one character and is never split.
public enum TextRules {
    /// The ellipsis appended to a cut string.
    public static let ellipsis: Character = "…"

    /// NFC, control characters removed, whitespace collapsed to single spaces and trimmed.
    /// With `keepNewlines`, line breaks survive as single `\n` (no blank lines, no spaces around them).
    public static func clean(_ text: String, keepNewlines: Bool = false) -> String {
        if isPlainASCII(text) { return text }
        let normalized = text.utf8.allSatisfy({ $0 < 0x80 }) ? text : text.precomposedStringWithCanonicalMapping
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        var pendingNewline = false
        for scalar in normalized.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029:
                if keepNewlines { pendingNewline = true } else { pendingSpace = true }
                continue
            default:
                break
            }
            // Whitespace first: a tab is both a control character and a space, and becomes a space.
            if scalar.properties.isWhitespace {
                pendingSpace = true
                continue
            }
            if scalar.properties.generalCategory == .control { continue }
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
        return String(out)
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

    /// Cuts `text` to at most `limit` grapheme clusters, the ellipsis included.
    ///
    /// The cut falls at the last word boundary inside the limit when that keeps at least 60% of the
    /// limit, else at a grapheme boundary; trailing spaces and punctuation go before the ellipsis.
    /// Returns the text unchanged (and `false`) when it fits.
    public static func truncate(_ text: String, to limit: Int) -> (text: String, cut: Bool) {
        guard limit > 0 else { return ("", !text.isEmpty) }
        // Find the end of the first `limit - 1` characters, and whether more than `limit` exist.
        var index = text.startIndex
        var count = 0
        var keepEnd = text.startIndex
        var lastSpace: (index: String.Index, count: Int)?
        while index < text.endIndex, count <= limit {
            if count == limit - 1 { keepEnd = index }
            let character = text[index]
            if count < limit - 1, character.isWhitespace { lastSpace = (index, count) }
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

    /// Cuts `text` so that it fits in `maxUnits` UTF-16 code units (Android's framework cap), by the
    /// same rule as ``truncate(_:to:)`` at the largest grapheme limit that fits.
    public static func truncate(_ text: String, toUTF16 maxUnits: Int) -> (text: String, cut: Bool) {
        if text.utf16.count <= maxUnits { return (text, false) }
        var low = 0
        var high = min(text.count, maxUnits)
        while low < high {
            let mid = (low + high + 1) / 2
            if truncate(text, to: mid).text.utf16.count <= maxUnits { low = mid } else { high = mid - 1 }
        }
        return (truncate(text, to: low).text, true)
    }

    /// Grapheme clusters in `text`.
    public static func length(_ text: String) -> Int { text.count }
}
