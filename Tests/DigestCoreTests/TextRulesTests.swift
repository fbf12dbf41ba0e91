import Foundation
import Testing

@testable import DigestCore

/// A named input for the table-driven text tests.
struct TextSample: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    var testDescription: String { name }
}

let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}"  // 👨‍👩‍👧‍👦
let flags = "\u{1F1F5}\u{1F1F1}\u{1F1FA}\u{1F1E6}"  // 🇵🇱🇺🇦

let trickySamples: [TextSample] = [
    TextSample(name: "10,000-character title", text: String(repeating: "Swift concurrency in depth ", count: 371) + "xyz"),
    TextSample(name: "10,000 letters, no spaces", text: String(repeating: "a", count: 10_000)),
    TextSample(name: "ZWJ families", text: String(repeating: family, count: 130)),
    TextSample(name: "ZWJ families with words", text: (0..<40).map { "\(family) family\($0)" }.joined(separator: " ")),
    TextSample(name: "flags", text: String(repeating: flags, count: 70)),
    TextSample(name: "flags between words", text: (0..<40).map { _ in "Polska \(flags) Ukraina" }.joined(separator: " ")),
    TextSample(name: "combining marks", text: String(repeating: "Z\u{0351}\u{036B}\u{0343}a\u{0308}\u{0301}lgo ", count: 40)),
    TextSample(name: "decomposed text", text: String(repeating: "Cafe\u{0301} cre\u{0300}me bru\u{0302}le\u{0301}e, ", count: 15)),
    TextSample(name: "CJK without spaces", text: String(repeating: "日本語のテキストには空白がありません。中文没有空格。", count: 10)),
    TextSample(name: "Arabic", text: String(repeating: "مرحبا بالعالم، هذا نص عربي طويل جدا للاختبار ", count: 6)),
    TextSample(name: "Hebrew", text: String(repeating: "שלום עולם, זה טקסט ארוך מאוד בעברית ", count: 6)),
    TextSample(name: "Mustache markup", text: String(repeating: "Read {{title}} and {{#x}}more{{/x}} {{{raw}}} ", count: 8)),
    TextSample(name: "punctuation runs", text: String(repeating: "Wait... what?! Yes, really; ", count: 10)),
    TextSample(name: "short ASCII", text: "Hello world"),
]

let limits = [1, 2, 10, 50, 60, 80, 120]

/// The rule of docs/007-rules-and-limits.md, written independently: the cut position, then stripping, then the ellipsis.
func expectedTruncation(_ text: String, limit: Int) -> String {
    let chars = Array(text)
    if chars.count <= limit { return text }
    if limit <= 1 { return limit == 1 ? "…" : "" }
    var cut = limit - 1
    if !chars[limit - 1].isWhitespace,
        let space = chars[0..<(limit - 1)].lastIndex(where: \.isWhitespace), space * 10 >= limit * 6
    {
        cut = space
    }
    var kept = chars[0..<cut]
    while let last = kept.last, last.isWhitespace || last.isPunctuation { kept = kept.dropLast() }
    return String(kept) + "…"
}

@Suite("TextRules.truncate(_:to:)")
struct TruncateTests {
    @Test(arguments: trickySamples, limits)
    func invariants(sample: TextSample, limit: Int) {
        let input = sample.text
        let (out, cut) = TextRules.truncate(input, to: limit)
        if input.count <= limit {
            #expect(!cut)
            #expect(out.unicodeScalars.elementsEqual(input.unicodeScalars))
            return
        }
        #expect(cut)
        #expect(out.count <= limit)
        #expect(out.last == TextRules.ellipsis)
        let kept = Array(out.dropLast())
        // Never splits a grapheme: the kept characters are the input's first characters, scalar for scalar.
        let prefix = Array(input.prefix(kept.count))
        #expect(kept.count == prefix.count)
        for (a, b) in zip(kept, prefix) {
            #expect(a.unicodeScalars.elementsEqual(b.unicodeScalars))
        }
        if let last = kept.last {
            #expect(!last.isWhitespace && !last.isPunctuation, "trailing \(last) before the ellipsis")
        }
        #expect(out.unicodeScalars.elementsEqual(expectedTruncation(input, limit: limit).unicodeScalars))
    }

    @Test(arguments: [
        ("The quick brown fox jumps over the lazy dog", 20, "The quick brown fox…"),
        ("The quick brown fox jumps over the lazy dog", 18, "The quick brown…"),
        ("Supercalifragilisticexpialidocious is long", 10, "Supercali…"),
        ("Hi there, wonderful world", 12, "Hi there…"),
        ("abcdef ghijkl", 10, "abcdef…"),  // the space keeps exactly 60%
        ("abcde fghijklm", 10, "abcde fgh…"),  // 50%: cut at a grapheme instead
        ("a bcdefghijklmnop", 10, "a bcdefgh…"),
        ("日本語のテキストには空白がありません", 10, "日本語のテキストに…"),
        ("שלום עולם זה טקסט ארוך מאוד", 12, "שלום עולם…"),
        ("Read {{title}} now and {{#x}}later{{/x}}", 20, "Read {{title}} now…"),
        ("Read {{title}} now and later", 15, "Read {{title…"),
        ("Hello world", 11, "Hello world"),
        ("Hello world!", 11, "Hello worl…"),  // space at 5 keeps 45%: grapheme cut
        ("Hi all, wonderful!", 10, "Hi all…"),
        ("Wow!!!!!!!!!!!!!!!", 6, "Wow…"),
        ("..........", 5, "…"),
    ] as [(String, Int, String)])
    func exactOutputs(input: String, limit: Int, expected: String) {
        #expect(TextRules.truncate(input, to: limit).text == expected)
    }

    @Test func emojiAndFlagsStayWhole() {
        let families = String(repeating: family, count: 12)
        #expect(TextRules.truncate(families, to: 10).text == String(repeating: family, count: 9) + "…")
        let sixFlags = String(repeating: flags, count: 3)  // 6 flags
        let out = TextRules.truncate(sixFlags, to: 4).text
        #expect(out == "\u{1F1F5}\u{1F1F1}\u{1F1FA}\u{1F1E6}\u{1F1F5}\u{1F1F1}…")
        #expect(out.unicodeScalars.count == 7)
    }

    @Test func combiningMarksStayWithTheirBase() {
        let decomposed = String(repeating: "e\u{0301}", count: 20)
        let out = TextRules.truncate(decomposed, to: 10).text
        #expect(Array(out.unicodeScalars) == Array(String(repeating: "e\u{0301}", count: 9).unicodeScalars) + ["…"])
    }

    @Test func zeroAndOneLimits() {
        let zero = TextRules.truncate("abc", to: 0)
        #expect(zero.text == "" && zero.cut)
        #expect(TextRules.truncate("", to: 0).cut == false)
        #expect(TextRules.truncate("ab", to: 1).text == "…")
        #expect(TextRules.truncate("a", to: 1).text == "a")
        #expect(TextRules.truncate(family, to: 1).text == family)
    }
}

@Suite("TextRules.truncate(_:toUTF16:)")
struct TruncateUTF16Tests {
    @Test(arguments: trickySamples, [1, 11, 100, 1023])
    func fitsAndStaysWhole(sample: TextSample, maxUnits: Int) {
        let (out, cut) = TextRules.truncate(sample.text, toUTF16: maxUnits)
        #expect(out.utf16.count <= maxUnits)
        if sample.text.utf16.count <= maxUnits {
            #expect(!cut && out == sample.text)
            return
        }
        #expect(cut)
        if !out.isEmpty {
            #expect(out.last == TextRules.ellipsis)
            let kept = Array(out.dropLast())
            #expect(zip(kept, sample.text).allSatisfy { $0.unicodeScalars.elementsEqual($1.unicodeScalars) })
        }
    }

    @Test func familiesFillTheCap() {
        // Each family is 11 UTF-16 units: 92 of them and the ellipsis make 1013; 93 would make 1024.
        let out = TextRules.truncate(String(repeating: family, count: 100), toUTF16: 1023).text
        #expect(out == String(repeating: family, count: 92) + "…")
        #expect(out.utf16.count == 1013)
    }

    @Test func plainLettersFillTheCapExactly() {
        let out = TextRules.truncate(String(repeating: "a", count: 10_000), toUTF16: 100)
        #expect(out.cut)
        #expect(out.text == String(repeating: "a", count: 99) + "…")
    }

    @Test func fittingTextIsUnchanged() {
        let out = TextRules.truncate("Hello", toUTF16: 5)
        #expect(out.text == "Hello" && !out.cut)
    }
}

@Suite("TextRules.clean")
struct CleanTests {
    /// Compares scalars: `==` on String would call canonically equivalent strings equal.
    static func same(_ a: String, _ b: String) -> Bool { a.unicodeScalars.elementsEqual(b.unicodeScalars) }

    @Test(arguments: [
        ("Hello world", false, "Hello world"),
        ("", false, ""),
        ("   ", false, ""),
        ("  Hello   world  ", false, "Hello world"),
        ("Cafe\u{0301}", false, "Caf\u{E9}"),
        ("\u{1100}\u{1161}\u{11A8}", false, "\u{AC01}"),
        ("A\u{030A}ngstro\u{0308}m", false, "\u{C5}ngstr\u{F6}m"),
        ("a\u{0}b\u{7}c\u{1B}d\u{7F}e", false, "abcde"),
        ("a\u{85}b", false, "a b"),
        ("a\u{00A0}\u{00A0}b\u{3000}c", false, "a b c"),
        ("a\tb", false, "a b"),
        ("a \t b", false, "a b"),
        ("line1\nline2", false, "line1 line2"),
        ("line1\nline2", true, "line1\nline2"),
        ("a\r\n\r\nb", false, "a b"),
        ("a\r\n\r\nb", true, "a\nb"),
        ("a \n  b", true, "a\nb"),
        ("\n\n hello \n\n", true, "hello"),
        ("a\u{2028}b\u{2029}c", true, "a\nb\nc"),
        ("a\u{2028}b", false, "a b"),
        ("Read {{title}}  now", false, "Read {{title}} now"),
        ("\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}  \u{1F1F5}\u{1F1F1}", false,
            "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466} \u{1F1F5}\u{1F1F1}"),
        ("  مرحبا   بالعالم ", false, "مرحبا بالعالم"),
        ("日本語 のテキスト", false, "日本語 のテキスト"),
    ] as [(String, Bool, String)])
    func cleans(input: String, keepNewlines: Bool, expected: String) {
        let out = TextRules.clean(input, keepNewlines: keepNewlines)
        #expect(Self.same(out, expected), "clean(\(input.debugDescription)) = \(out.debugDescription)")
    }

    @Test(arguments: trickySamples, [false, true])
    func invariants(sample: TextSample, keepNewlines: Bool) {
        let noisy = "\u{7}  " + sample.text.replacingOccurrences(of: " ", with: " \t\n  \u{0} ") + "\r\n "
        let out = TextRules.clean(noisy, keepNewlines: keepNewlines)
        #expect(Self.same(out, out.precomposedStringWithCanonicalMapping), "NFC")
        #expect(!out.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" })
        if !keepNewlines { #expect(!out.contains("\n")) }
        #expect(!out.contains("  "))
        #expect(out.first.map { !$0.isWhitespace } ?? true)
        #expect(out.last.map { !$0.isWhitespace } ?? true)
        #expect(Self.same(TextRules.clean(out, keepNewlines: keepNewlines), out), "idempotent")
    }

    @Test func decomposedTextMatchesComposed() {
        let decomposed = "Za\u{0308}hlung, cafe\u{0301}, n\u{0303}"
        #expect(Self.same(TextRules.clean(decomposed), "Z\u{E4}hlung, caf\u{E9}, \u{F1}"))
    }

    @Test func lengthCountsGraphemes() {
        #expect(TextRules.length(family + flags + "e\u{0301}") == 4)
    }
}
