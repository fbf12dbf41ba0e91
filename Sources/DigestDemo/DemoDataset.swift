public import DigestCore
public import DigestStore
public import Foundation

/// A realistic sample, the same for the same seed and week: users across four languages and many
/// time zones, 1–3 devices each, articles with long, emoji and CJK titles, four weeks of reads.
public struct DemoDataset: Sendable {
    public var seed: UInt64 = 2026
    public var users = 2400
    public var articles = 360
    /// Where article images live.
    public var imageBase = "https://images.digest.example"
    /// File names under `imageBase`, shared round-robin by the articles that have an image; nil: one
    /// `<article id>.jpg` per article.
    public var imageNames: [String]?
    /// The last week of reads; reads cover it and the three before.
    public var week: ISOWeek

    public init(week: ISOWeek) {
        self.week = week
    }

    /// Writes `users.jsonl`, `articles.jsonl` and `reads.jsonl` into `directory`; returns their paths.
    public func write(to directory: URL) throws -> [ImportKind: String] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = SplitMix64(seed: seed)
        let weekEnd = Int64(week.next.monday.daysSinceEpoch) * 86_400
        let firstDay = weekEnd - 28 * 86_400

        // Articles, published over five weeks up to the week's end.
        var catalogue: [(id: String, published: Int64, topics: [String], minutes: Int, language: String)] = []
        var articleLines: [String] = []
        var imagesGiven = 0
        for index in 0..<articles {
            let language = Self.languages[index % Self.languages.count]
            let topics = (0..<random.next(in: 1...3)).map { _ in Self.topics[random.next(below: Self.topics.count)] }
            let published = firstDay - 7 * 86_400 + Int64(random.next(below: 35 * 86_400))
            let id = "a\(index + 1)"
            let minutes = random.next(in: 2...18)
            let hasImage = random.next(below: 10) < 7
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("id", id)
            writer.field("title", Self.title(language: language, topic: topics[0], random: &random))
            writer.field("url", "https://news.digest.example/\(language)/\(id)")
            writer.key("imageUrl")
            if hasImage {
                let name = imageNames.flatMap { $0.isEmpty ? nil : $0[imagesGiven % $0.count] } ?? "\(id).jpg"
                imagesGiven += 1
                writer.value("\(imageBase)/\(name)")
            } else {
                writer.raw(Array("null".utf8))
            }
            writer.key("topics")
            writer.beginArray()
            for topic in Array(Set(topics)).sorted() { writer.value(topic) }
            writer.endArray()
            writer.field("publishedAt", Timestamp.format(published))
            writer.field("readingMinutes", minutes)
            writer.endObject()
            articleLines.append(writer.string)
            catalogue.append((id, published, topics, minutes, language))
        }

        var userLines: [String] = []
        var readLines: [String] = []
        for index in 0..<users {
            let id = "u\(index + 1)"
            var locale = Self.locales[random.next(below: Self.locales.count)]
            if random.next(below: 100) == 0 { locale = "fr-FR" }  // no templates: falls back to en
            var zone = Self.zones[random.next(below: Self.zones.count)]
            if random.next(below: 200) == 0 { zone = "Mars/Olympus" }  // unknown: UTC
            let optedOut = random.next(below: 100) < 3
            let deviceCount = random.next(below: 100) < 2 ? 0 : random.next(in: 1...3)
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("id", id)
            writer.field("locale", locale)
            writer.field("timeZone", zone)
            writer.key("optedOut")
            writer.value(optedOut)
            writer.key("devices")
            writer.beginArray()
            for device in 0..<deviceCount {
                let platform = Platform.allCases[random.next(below: 3)]
                writer.beginObject()
                writer.field("token", Self.token(user: index, device: device, random: &random))
                writer.field("platform", platform.rawValue)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
            userLines.append(writer.string)

            // Reads: an activity level per user; some skip the last week entirely.
            let activity = random.next(in: 0...12)
            let quietLastWeek = random.next(below: 100) < 12
            for day in 0..<28 {
                if quietLastWeek && day >= 21 { continue }
                let readsToday = random.next(below: 14) < activity ? random.next(in: 1...3) : 0
                for _ in 0..<readsToday {
                    let at = firstDay + Int64(day) * 86_400 + Int64(random.next(below: 86_400))
                    // Most reads are in the reader's own language.
                    var article = catalogue[random.next(below: catalogue.count)]
                    let own = LocaleChain.chain(for: locale).contains(article.language)
                    if !own && random.next(below: 10) < 8 { article = catalogue[random.next(below: catalogue.count)] }
                    guard article.published < at else { continue }
                    var read = JSONWriter()
                    read.beginObject()
                    read.field("userId", id)
                    read.field("articleId", article.id)
                    read.field("readAt", Timestamp.format(at))
                    read.field("seconds", random.next(in: 20...(article.minutes * 90)))
                    read.endObject()
                    readLines.append(read.string)
                }
            }
        }
        var paths: [ImportKind: String] = [:]
        for (kind, lines) in [(ImportKind.users, userLines), (.articles, articleLines), (.reads, readLines)] {
            let url = directory.appendingPathComponent("\(kind.rawValue).jsonl")
            try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
            paths[kind] = url.path
        }
        return paths
    }

    static let languages = ["en", "pl", "ru", "zh-Hans"]
    static let locales = ["en", "en-GB", "en-US", "pl", "pl-PL", "ru", "ru-RU", "zh-Hans", "zh-CN"]
    static let zones = [
        "Europe/Warsaw", "Europe/London", "Europe/Moscow", "America/New_York", "America/Los_Angeles",
        "America/Sao_Paulo", "Asia/Shanghai", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Sydney",
        "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/St_Johns",
    ]
    static let topics = [
        "swift", "linux", "databases", "security", "ai", "design", "science", "climate", "space", "health",
        "economy", "football", "music", "cinema", "travel", "food", "history", "books",
    ]

    static func token(user: Int, device: Int, random: inout SplitMix64) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let prefix = String((0..<22).map { _ in alphabet[random.next(below: alphabet.count)] })
        let body = String((0..<140).map { _ in alphabet[random.next(below: alphabet.count)] })
        return "\(prefix):APA91b\(body)"
    }

    static func title(language: String, topic: String, random: inout SplitMix64) -> String {
        let (openers, subjects, endings): ([String], [String], [String])
        switch language {
        case "pl":
            openers = ["Dlaczego", "Jak", "Co dalej:", "Raport:", "Wywiad:", "Pięć lekcji:"]
            subjects = ["zespoły przechodzą na nowe narzędzia", "miasta walczą z upałem", "startupy zmieniają rynek",
                        "naukowcy czytają dane z orbity", "biblioteki wracają do łask", "kibice planują sezon"]
            endings = ["", " — analiza po roku testów", " i co z tego wynika dla czytelników w Polsce", " (część 2)",
                       ": żółć, gęśl i jaźń w nowym wydaniu"]
        case "ru":
            openers = ["Почему", "Как", "Что дальше:", "Репортаж:", "Интервью:", "Пять уроков:"]
            subjects = ["команды переходят на новые инструменты", "города борются с жарой", "стартапы меняют рынок",
                        "учёные читают данные с орбиты", "библиотеки снова в моде", "болельщики ждут сезона"]
            endings = ["", " — разбор после года испытаний", " и что это значит для читателей", " (часть 2)"]
        case "zh-Hans":
            openers = ["为什么", "深度：", "观察：", "专访：", "五个教训："]
            subjects = ["越来越多的团队开始使用新工具", "城市如何应对高温", "初创公司正在改变市场", "科学家解读轨道数据",
                        "图书馆重新受到欢迎"]
            endings = ["", "——一年测试之后的深度分析", "以及未来的发展方向", "（下）"]
        default:
            openers = ["Why", "How", "What next:", "Report:", "Interview:", "Five lessons:"]
            subjects = ["teams are moving to new tools", "cities are fighting the heat", "start-ups are changing the market",
                        "scientists read data from orbit", "libraries are back in fashion", "fans are planning the season"]
            endings = ["", " — an analysis after a year of testing in production", " and what it means for readers",
                       " (part 2)"]
        }
        let separator = language == "zh-Hans" ? "" : " "
        var title = openers[random.next(below: openers.count)] + separator + subjects[random.next(below: subjects.count)]
            + endings[random.next(below: endings.count)] + separator + "#" + topic
        switch random.next(below: 10) {
        case 0: title += " 🚀"
        case 1: title = "👨‍👩‍👧‍👦 " + title
        case 2: title += " 🇵🇱🇺🇦"
        case 3: title += " {{notATag}}"
        default: break
        }
        return title
    }
}
