import DigestCore

/// The three kinds of record, each read from a line's JSON object (README, "Command line": the
/// formats under `digest import`; docs/008-import.md: the rules). Free text (a title, a topic) is
/// cleaned by the text rules (``TextRules/clean(_:keepNewlines:)``: NFC, control characters removed,
/// whitespace collapsed); ids, tokens, names and urls pass ``ImportFieldRules`` as written or the
/// line is skipped.
enum ImportRecords {
    /// A line of `users.jsonl`.
    static func user(_ line: JSONFields) throws(LineProblem) -> Reader {
        let id = try ImportFieldRules.id(line.string("id"), "user id")
        return try about("user \(ImportFieldRules.quote(id))") { () throws(LineProblem) -> Reader in
            var locale = LocaleChain.root
            if let given = try line.optionalString("locale") {
                locale = try ImportFieldRules.name(given, "locale", .badLocale)
            }
            var timeZone = "UTC"
            if let given = try line.optionalString("timeZone") {
                timeZone = try ImportFieldRules.name(given, "timeZone", .badTimeZone)
            }
            let optedOut = try line.optionalBool("optedOut") ?? false
            var devices: [Device] = []
            var seen = Set<String>()
            for (index, element) in (try line.optionalArray("devices") ?? []).enumerated() {
                let path = "devices[\(index)]"
                let fields = try JSONFields(element, at: path)
                let token = try ImportFieldRules.token(fields.string("token"), path)
                let platformName = try fields.string("platform")
                guard let platform = Platform(rawValue: platformName) else {
                    throw LineProblem(
                        .badPlatform, "\(path): unknown platform \(ImportFieldRules.quote(platformName)) (android, ios or web)")
                }
                let registeredAt = try fields.optionalInstant("registeredAt")
                // A token listed twice counts once, as first listed. Every device is kept, however many
                // (the line's length bounds them): a run picks the ones it sends to (`DeviceSelection`).
                if seen.insert(token).inserted {
                    devices.append(Device(token: token, platform: platform, registeredAt: registeredAt))
                }
            }
            return Reader(id: id, locale: locale, timeZone: timeZone, optedOut: optedOut, devices: devices)
        }
    }

    /// A line of `articles.jsonl`.
    static func article(_ line: JSONFields) throws(LineProblem) -> Article {
        let id = try ImportFieldRules.id(line.string("id"), "article id")
        return try about("article \(ImportFieldRules.quote(id))") { () throws(LineProblem) -> Article in
            let title = TextRules.clean(try line.string("title"))
            let url = try ImportFieldRules.url(line.string("url"), "url")
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw LineProblem(.badURL, "url must be http or https")
            }
            var image: String?
            if let given = try line.optionalString("imageUrl"), !given.isEmpty {
                image = try ImportFieldRules.url(given, "imageUrl")
            }
            var topics: [String] = []
            var seen = Set<String>()
            for (index, element) in (try line.optionalArray("topics") ?? []).enumerated() {
                guard case .string(let given) = element else {
                    throw LineProblem(.wrongType, "'topics[\(index)]' must be a string, not \(element.kind)")
                }
                // Cleaning may leave nothing, or a topic listed before.
                let topic = TextRules.clean(given)
                guard !topic.isEmpty, seen.insert(topic).inserted else { continue }
                guard topic.utf8.count <= ImportLimits.maxTopicBytes else {
                    throw LineProblem(
                        .badTopics,
                        "topic \(ImportFieldRules.quote(topic)) is \(topic.utf8.count) bytes, over the limit of \(ImportLimits.maxTopicBytes)")
                }
                topics.append(topic)
            }
            guard topics.count <= ImportLimits.maxTopicsPerArticle else {
                throw LineProblem(.badTopics, "\(topics.count) topics, over the limit of \(ImportLimits.maxTopicsPerArticle)")
            }
            let published = try line.instant("publishedAt")
            let minutes = try line.optionalCount("readingMinutes", max: ImportLimits.maxReadingMinutes) ?? 0
            var language: String?
            if let given = try line.optionalString("language"), !given.isEmpty {
                guard given.utf8.count <= ImportLimits.maxNameBytes, LanguageTag.isWellFormed(given) else {
                    throw LineProblem(
                        .badLanguage, "language \(ImportFieldRules.quote(given)) is not a BCP 47 tag (like en, pl-PL or zh-Hans)")
                }
                language = given
            }
            return Article(
                id: id, title: title, url: url, imageURL: image, topics: topics, publishedAt: published,
                readingMinutes: minutes, language: language)
        }
    }

    /// A line of `reads.jsonl`.
    static func read(_ line: JSONFields) throws(LineProblem) -> ImportedRead {
        let user = try ImportFieldRules.id(line.string("userId"), "userId")
        let article = try ImportFieldRules.id(line.string("articleId"), "articleId")
        let readAt = try line.instant("readAt")
        let seconds = try line.optionalCount("seconds", max: ImportLimits.maxReadSeconds) ?? 0
        return ImportedRead(userID: user, articleID: article, readAt: readAt, seconds: seconds)
    }

    /// `body`'s problem, if any, said of `who` (`user 'u1': …`).
    private static func about<T>(_ who: String, _ body: () throws(LineProblem) -> T) throws(LineProblem) -> T {
        do {
            return try body()
        } catch {
            throw LineProblem(error.code, "\(who): \(error.reason)")
        }
    }
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
