import DigestCore

/// A line of `users.jsonl`.
struct UserRecord: Decodable {
    struct DeviceRecord: Decodable {
        var token: String
        var platform: String
    }

    var id: String
    var locale: String?
    var timeZone: String?
    var optedOut: Bool?
    var devices: [DeviceRecord]?

    func validated() throws(LineProblem) -> Reader {
        guard !id.isEmpty else { throw LineProblem("empty user id") }
        var devices: [Device] = []
        var seen = Set<String>()
        for device in self.devices ?? [] {
            guard !device.token.isEmpty else { throw LineProblem("user \(id): empty device token") }
            guard let platform = Platform(rawValue: device.platform) else {
                throw LineProblem("user \(id): unknown platform '\(device.platform)' (android, ios or web)")
            }
            if seen.insert(device.token).inserted { devices.append(Device(token: device.token, platform: platform)) }
        }
        return Reader(
            id: id, locale: locale ?? LocaleChain.root, timeZone: timeZone ?? "UTC", optedOut: optedOut ?? false,
            devices: devices)
    }
}

/// A line of `articles.jsonl`.
struct ArticleRecord: Decodable {
    var id: String
    var title: String
    var url: String
    var imageUrl: String?
    var topics: [String]?
    var publishedAt: String
    var readingMinutes: Int?
    /// BCP 47; absent or empty: unknown.
    var language: String?

    func validated() throws(LineProblem) -> Article {
        guard !id.isEmpty else { throw LineProblem("empty article id") }
        guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
            throw LineProblem("article \(id): url must be http or https")
        }
        guard let published = Timestamp.parse(publishedAt) else {
            throw LineProblem("article \(id): publishedAt '\(publishedAt)' is not an ISO 8601 instant")
        }
        let minutes = readingMinutes ?? 0
        guard minutes >= 0 else { throw LineProblem("article \(id): negative readingMinutes") }
        let image = imageUrl.flatMap { $0.isEmpty ? nil : $0 }
        let language = language.flatMap { $0.isEmpty ? nil : $0 }
        if let language, !LanguageTag.isWellFormed(language) {
            throw LineProblem("article \(id): language '\(language)' is not a BCP 47 tag (like en, pl-PL or zh-Hans)")
        }
        return Article(
            id: id, title: title, url: url, imageURL: image, topics: topics ?? [], publishedAt: published,
            readingMinutes: minutes, language: language)
    }
}

/// A line of `reads.jsonl`.
struct ReadRecord: Decodable {
    var userId: String
    var articleId: String
    var readAt: String
    var seconds: Int?

    func validated() throws(LineProblem) -> (user: String, article: String, readAt: Int64, seconds: Int) {
        guard let instant = Timestamp.parse(readAt) else {
            throw LineProblem("readAt '\(readAt)' is not an ISO 8601 instant")
        }
        let seconds = self.seconds ?? 0
        guard seconds >= 0 else { throw LineProblem("negative seconds") }
        return (userId, articleId, instant, seconds)
    }
}

/// Why one line was not imported.
struct LineProblem: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

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
