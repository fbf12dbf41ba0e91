import Foundation

/// Base64url (RFC 4648, section 5) without padding, as JWTs and Web Push keys are written; decoding
/// takes the padded form (and standard base64) too.
package enum Base64URL {
    package static func encode(_ bytes: [UInt8]) -> String {
        // By hand: every message's reply key is one (Foundation's encoder and three replacements
        // cost a run a tenth of its time).
        let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        return alphabet.withUTF8Buffer { table in
            String(unsafeUninitializedCapacity: (bytes.count * 4 + 2) / 3) { out in
                var o = 0
                var i = 0
                while i + 3 <= bytes.count {
                    let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                    out[o + 2] = table[Int(n >> 6 & 63)]
                    out[o + 3] = table[Int(n & 63)]
                    o += 4
                    i += 3
                }
                let rest = bytes.count - i
                if rest > 0 {
                    let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                    o += 2
                    if rest == 2 {
                        out[o] = table[Int(n >> 6 & 63)]
                        o += 1
                    }
                }
                return o
            }
        }
    }

    /// The bytes of base64url (or standard base64) `text`, padded or not; nil for anything else
    /// (a character outside the alphabets, a length no encoding has, padding in the middle, or bits
    /// left over that are not zero). Decoded by hand: a sender decodes two keys a message.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        while utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        guard utf8.count % 4 != 1 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count * 3 / 4)
        var buffer: UInt32 = 0, bits = 0
        for character in utf8 {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        return buffer == 0 ? bytes : nil
    }
}
