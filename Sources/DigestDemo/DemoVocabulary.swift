package import DigestCore

/// The words of the generated histories (``DemoHistory``): the demo's JSON Lines and the
/// benchmark's SQLite files draw their languages, locales, time zones, topics, headlines and device
/// tokens from here.
package enum DemoVocabulary {
    /// The articles' languages, round robin.
    package static let languages = ["en", "pl", "ru", "zh-Hans"]
    /// The users' locales: those of Templates/ and regional variants (a history adds 1% `fr-FR`, which
    /// has no templates and falls back to English).
    package static let locales = ["en", "en-GB", "en-US", "pl", "pl-PL", "ru", "ru-RU", "zh-Hans", "zh-CN"]
    /// The users' time zones (a history adds a few unknown ones, `Mars/Olympus`, which run on UTC).
    package static let zones = [
        "Europe/Warsaw", "Europe/London", "Europe/Moscow", "America/New_York", "America/Los_Angeles",
        "America/Sao_Paulo", "Asia/Shanghai", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Sydney",
        "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/St_Johns",
    ]
    package static let topics = [
        "swift", "linux", "databases", "security", "ai", "design", "science", "climate", "space", "health",
        "economy", "football", "music", "cinema", "travel", "food", "history", "books",
    ]

    /// Each topic as a headline in that language names it (``topics`` order), so a Russian headline ends
    /// in Russian ("…переходят на футбол"), not in the slug.
    static let topicWords: [String: [String]] = [
        "en": [
            "Swift", "Linux", "databases", "security", "AI", "design", "science", "climate", "space", "health",
            "the economy", "football", "music", "cinema", "travel", "food", "history", "books",
        ],
        "pl": [
            "Swift", "Linux", "bazy danych", "bezpieczeństwo", "AI", "projektowanie", "nauka", "klimat", "kosmos",
            "zdrowie", "gospodarka", "piłka nożna", "muzyka", "kino", "podróże", "kuchnia", "historia", "książki",
        ],
        "ru": [
            "Swift", "Linux", "базы данных", "безопасность", "ИИ", "дизайн", "наука", "климат", "космос", "здоровье",
            "экономика", "футбол", "музыка", "кино", "путешествия", "еда", "история", "книги",
        ],
        "zh-Hans": [
            "Swift", "Linux", "数据库", "安全", "人工智能", "设计", "科学", "气候", "太空", "健康", "经济", "足球", "音乐",
            "电影", "旅行", "美食", "历史", "图书",
        ],
    ]

    /// A headline in the article's language, sometimes with emoji, flags or template-like braces.
    package static func title(language: String, topic: String, random: inout SplitMix64) -> String {
        let parts: [String]
        switch language {
        case "pl":
            parts = ["Dlaczego", "zespoły", "przechodzą na", "nowe narzędzia", "i co z tego wynika dla", "czytelników",
                     "w Polsce", "— analiza", "po roku", "testów", "żółć gęślą jaźń"]
        case "ru":
            parts = ["Почему", "команды", "переходят на", "новые инструменты", "и что это значит для", "читателей",
                     "в этом году", "— разбор", "после года", "испытаний", "съешь же ещё этих мягких булок"]
        case "zh-Hans":
            parts = ["为什么", "越来越多的团队", "开始使用", "新的工具", "这对读者意味着什么", "一年测试之后的", "深度分析",
                     "以及未来的发展方向", "专家解读"]
        default:
            parts = ["Why", "teams", "are moving to", "new tools", "and what it means for", "readers", "this year",
                     "— an analysis", "after a year", "of testing", "in production"]
        }
        let separator = language == "zh-Hans" ? "" : " "
        let count = random.next(in: 3...parts.count)
        let word = topics.firstIndex(of: topic).flatMap { topicWords[language]?[$0] } ?? topic
        var title = (parts.prefix(count) + [word]).joined(separator: separator)
        switch random.next(below: 10) {
        case 0: title += " 🚀"
        case 1: title = "👨‍👩‍👧‍👦 " + title
        case 2: title += " 🇵🇱🇺🇦"
        case 3: title += " {{notATag}}"
        default: break
        }
        return title
    }

    /// An FCM-like registration token: 22 characters, `:APA91b`, 140 more (169 bytes).
    package static func token(random: inout SplitMix64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(22 + 7 + 140)
        var bits: UInt64 = 0
        var left = 0
        // Six bits a character, ten characters a draw.
        func character() -> UInt8 {
            if left == 0 {
                bits = random.next()
                left = 10
            }
            defer {
                bits >>= 6
                left -= 1
            }
            return tokenAlphabet[Int(bits & 63)]
        }
        for _ in 0..<22 { bytes.append(character()) }
        bytes += ":APA91b".utf8
        for _ in 0..<140 { bytes.append(character()) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static let tokenAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}
