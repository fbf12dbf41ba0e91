import DigestCore
import Foundation

/// RFC 3339 instants: `2026-11-17T19:22:05Z`, fractions and `±hh:mm` offsets allowed; a date or
/// time that does not exist (February 30, 24:00, an offset of 25 hours) is `nil`.
public enum Timestamp {
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for i in start..<(start + count) {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard b.count >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20,
            b[13] == 0x3A, b[16] == 0x3A,
            let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
            let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        if index < b.count && b[index] == 0x2E {
            index += 1
            let fraction = index
            while index < b.count && b[index] >= 0x30 && b[index] <= 0x39 { index += 1 }
            guard index > fraction else { return nil }
        }
        var offset = 0
        guard index < b.count else { return nil }
        if b[index] == 0x5A || b[index] == 0x7A {
            index += 1
        } else if b[index] == 0x2B || b[index] == 0x2D {
            guard let oh = digits(index + 1, 2), index + 3 < b.count, b[index + 3] == 0x3A,
                let om = digits(index + 4, 2), oh < 24, om < 60
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[index] == 0x2B ? 1 : -1)
            index += 6
        } else {
            return nil
        }
        guard index == b.count else { return nil }
        let date = CivilDate(year: year, month: month, day: day)
        guard CivilDate(daysSinceEpoch: date.daysSinceEpoch) == date else { return nil }
        return Int64(date.daysSinceEpoch) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offset)
    }

    /// `2026-11-17T19:22:05Z`.
    public static func format(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = Int(seconds - days * 86_400)
        let date = CivilDate(daysSinceEpoch: Int(days))
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(date)T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))Z"
    }
}
