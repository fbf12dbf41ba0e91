import DigestCore
import Foundation
import Testing

/// `JSONWriter` skips runs that need no escape eight bytes at a time; on random text, with what needs
/// escaping at every place in a word, it must write what escaping byte by byte writes.
@Suite struct JSONWriterTests {
    static func reference(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case ..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }

    static let alphabet: [Unicode.Scalar] = [
        "a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "!", "#", "[", "]", "é", "ł", "Ж",
        "中", "…", "\u{2212}", "😀", "\u{1B}", "~",
    ]

    @Test func escapesAsByteByByte() {
        var state: UInt64 = 0x15_0E_5C_A9E
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for round in 0..<4000 {
            var scalars = String.UnicodeScalarView()
            // Mostly plain runs, so that escapes land at every offset of an eight-byte word.
            for _ in 0..<next(70) {
                scalars.append(next(4) == 0 ? Self.alphabet[next(Self.alphabet.count)] : Self.alphabet[next(2)])
            }
            let text = round == 0 ? "" : String(scalars)
            var writer = JSONWriter()
            writer.value(text)
            #expect(writer.bytes == Self.reference(text), "\(text.debugDescription)")
        }
    }
}
