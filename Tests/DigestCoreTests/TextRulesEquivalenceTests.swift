import DigestCore
import Foundation
import Testing

/// `clean` takes fast paths (plain scalars, normalization only when needed); on random text it must
/// agree with the rule applied the slow, obvious way: NFC first, then every scalar by its properties.
@Suite struct TextRulesEquivalenceTests {
    static func reference(_ text: String, keepNewlines: Bool) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        var pendingNewline = false
        for scalar in text.precomposedStringWithCanonicalMapping.unicodeScalars {
            if [0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029].contains(scalar.value) {
                if keepNewlines { pendingNewline = true } else { pendingSpace = true }
                continue
            }
            if scalar.properties.isWhitespace { pendingSpace = true; continue }
            if scalar.properties.generalCategory == .control { continue }
            if !out.isEmpty {
                if pendingNewline { out.append("\n") } else if pendingSpace { out.append(" ") }
            }
            pendingSpace = false
            pendingNewline = false
            out.append(scalar)
        }
        return String(out).precomposedStringWithCanonicalMapping
    }

    static let alphabet: [UInt32] = [
        0x41, 0x65, 0x7A, 0x20, 0x20, 0x09, 0x0A, 0x0D, 0x00, 0x1B, 0x7F, 0x85, 0xA0, 0xE9, 0x142, 0x17C,
        0x301, 0x308, 0x327, 0x41F, 0x439, 0x418, 0x306, 0x5D0, 0x627, 0x200F, 0x202E, 0x2003, 0x2028, 0x3000,
        0x4E2D, 0x6587, 0xF900, 0xFF01, 0x1F468, 0x200D, 0x1F469, 0x1F1F5, 0x1F1F1, 0xFE0F, 0x1F680, 0x2026,
        0x3099, 0x304B, 0x1100, 0x1161, 0xAC00, 0x37E, 0x2126, 0xAD, 0x7B, 0x7D, 0x2212,
    ]

    @Test func fastPathsAgreeWithTheReference() {
        var state: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for round in 0..<3000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<next(40) {
                scalars.append(Unicode.Scalar(Self.alphabet[next(Self.alphabet.count)])!)
            }
            let text = String(scalars)
            let keep = round % 2 == 0
            #expect(
                TextRules.clean(text, keepNewlines: keep) == Self.reference(text, keepNewlines: keep),
                "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }
}
