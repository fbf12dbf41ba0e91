import DigestCore
import DigestDemo
import DigestStore
import DigestImport

/// Seeded mutations of import lines: byte flips, truncation, splices of other lines, deep nesting,
/// numbers at and past their limits, control characters and lone surrogates, dates that do not
/// exist, byte-order marks and `\r`, long strings and, rarely, lines over the length limit. A third
/// of the lines are left as they are, so ids repeat.
struct LineMutator {
    private var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func below(_ n: Int) -> Int { random.next(below: max(1, n)) }

    private mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }

    static let numbers = [
        "0", "-0", "-1", "1.5", "6.0", "1e2", "1e400", "-1e400", "1e-400", "99999999999999999999", "9223372036854775808",
        "1440", "1441", "86400", "86401", "01", "-", "1.", "\"6\"", "null", "true", "[]", "{}",
    ]
    static let escapes = [
        "\\u0000", "\\n", "\\r\\n", "\\t", "\\u0007", "\\u001b", "\\u007f", "\\u0085", "\\u2028", "\\u202e", "\\ud800",
        "\\udc00", "\\ud83d\\ude00", "\\ud83d", "e\\u0301", "\\\"", "\\\\", "\\u", "\\x", "é", "😀",
    ]
    static let dates = [
        "2026-02-29T00:00:00Z", "2026-11-31T08:00:00Z", "2026-11-17T24:00:00Z", "2026-11-17T19:22:05+25:00",
        "2026-11-17T19:22:05", "9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59", "2024-02-29T23:59:60Z",
        "2026-11-17T19:22:05.Z", "2026-11-17T19:22:05.123456789+05:45",
    ]

    /// One mutated line from `line` (another line of the corpus may be spliced in).
    mutating func mutate(_ line: [UInt8], splicing other: [UInt8]) -> [UInt8] {
        var bytes = line
        if below(3) == 0 { return bytes }
        // The long mutations come last, so the others need not walk what they add.
        var nest = false
        var huge = false
        for _ in 0..<(1 + below(3)) {
            let at = below(bytes.count + 1)
            switch below(14) {
            case 0:
                if at < bytes.count { bytes[at] ^= UInt8(1 << below(8)) }
            case 1:
                if at < bytes.count { bytes[at] = pick([0x00, 0x01, 0x09, 0x0D, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xED, 0xF4, 0xF5, 0xFF]) }
            case 2:
                bytes.removeSubrange(at...)
            case 3:
                let from = below(other.count)
                let length = min(other.count - from, 1 + below(80))
                bytes.insert(contentsOf: other[from..<(from + length)], at: at)
            case 4:
                nest = true
            case 5:
                bytes = Self.replacingValue(in: bytes, after: pick(["seconds", "readingMinutes"]), with: pick(Self.numbers))
            case 6:
                bytes = Self.replacingValue(
                    in: bytes, after: pick(["id", "userId", "articleId", "title", "token", "locale", "timeZone", "url", "imageUrl"]),
                    with: "\"" + pick(["", "x", "a"]) + pick(Self.escapes) + pick(["", "y"]) + "\"")
            case 7:
                bytes.insert(contentsOf: Array(pick(Self.escapes).utf8), at: at)
            case 8:
                bytes = Self.replacingValue(in: bytes, after: pick(["readAt", "publishedAt", "registeredAt"]), with: "\"" + pick(Self.dates) + "\"")
            case 9:
                bytes = below(2) == 0 ? [0xEF, 0xBB, 0xBF] + bytes : bytes + [0x0D]
            case 10:
                // Long strings: past the id and token limits.
                let length = pick([255, 256, 257, 1_023, 1_024, 1_025, 5_000])
                bytes = Self.replacingValue(
                    in: bytes, after: pick(["id", "token", "userId", "title"]), with: "\"" + String(repeating: "z", count: length) + "\"")
            case 11:
                bytes = Self.replacingValue(in: bytes, after: pick(["devices", "topics", "optedOut", "platform"]), with: pick(Self.numbers))
            case 12:
                huge = huge || below(60) == 0
            default:
                if at < bytes.count { bytes.remove(at: at) }
            }
        }
        // A line break would make two lines of one.
        for index in bytes.indices where bytes[index] == 0x0A { bytes[index] = 0x20 }
        if huge {
            bytes = Self.replacingValue(in: bytes, after: "title", with: "\"" + String(repeating: "w", count: ImportLimits.maxLineBytes) + "\"")
        }
        if nest {
            // Deep nesting, balanced or not, from a few levels to hundreds of thousands.
            let depth = below(20) == 0 ? 200_000 : pick([2, 31, 32, 33, 100, 5_000])
            var nested = Array(#""deep":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: depth)
            if below(3) > 0 { nested += Array(repeating: UInt8(ascii: "]"), count: depth) + [UInt8(ascii: ",")] }
            bytes.insert(contentsOf: nested, at: Self.afterFirstBrace(bytes) ?? bytes.count)
        }
        return bytes
    }

    private static func afterFirstBrace(_ bytes: [UInt8]) -> Int? {
        bytes.firstIndex(of: UInt8(ascii: "{")).map { $0 + 1 }
    }

    /// `bytes` with the value of the first `"key":` replaced by `value` (a string or a number,
    /// whatever follows up to the next `,` `}` or `]` outside a string); `bytes` when the key is absent.
    static func replacingValue(in bytes: [UInt8], after key: String, with value: String) -> [UInt8] {
        let needle = Array("\"\(key)\":".utf8)
        guard needle.count <= bytes.count,
            let start = (0...(bytes.count - needle.count)).first(where: { bytes[$0..<($0 + needle.count)].elementsEqual(needle) })
        else { return bytes }
        let from = start + needle.count
        var end = from
        var inString = false
        var escaped = false
        while end < bytes.count {
            let byte = bytes[end]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                break
            }
            end += 1
        }
        return Array(bytes[..<from]) + Array(value.utf8) + Array(bytes[end...])
    }
}
