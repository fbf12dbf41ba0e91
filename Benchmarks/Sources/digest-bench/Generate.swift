import ArgumentParser
import DigestCore
import DigestSQLite
import DigestStore
import Foundation

/// `digest-bench generate`: a large, deterministic reading history written straight into a SQLite
/// file with the project's schema (users, devices, articles, reads), for `digest run` to chew on.
struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a deterministic history (users, devices, articles, reads) into a new SQLite file.")

    @Option(help: "The SQLite file to create (replaced if it exists).")
    var db: String

    @Option(help: "Number of users.")
    var users: Int

    @Option(help: "Number of reads in all, spread over the week and the week before.")
    var reads: Int

    @Option(help: "The ISO week the run will digest, e.g. 2026-W46.")
    var week: String

    @Option(help: "Number of articles, published within the two weeks before the week's end.")
    var articles: Int = 400

    @Option(help: "Seed of the generator: the same seed gives the same file.")
    var seed: UInt64 = 2026

    @Option(help: "Users per transaction.")
    var usersPerTransaction: Int = 20_000

    @Option(help: "Comma-separated locales to draw users' locales from (default: en, pl, ru, zh-Hans and regional variants, 1% fr-FR).")
    var locales: String?

    func validate() throws {
        guard users > 0, reads >= 0, articles >= 16 else {
            throw ValidationError("--users must be positive, --reads not negative, --articles at least 16")
        }
        _ = try ISOWeek(parsing: week)
    }

    func run() throws {
        let week = try ISOWeek(parsing: week)
        let clock = Stopwatch()
        for suffix in ["", "-wal", "-shm", ".lock"] { try? FileManager.default.removeItem(atPath: db + suffix) }

        // The project's own schema, migrations and connection settings (WAL, foreign keys on).
        var connection: SQLiteConnection? = try SQLiteDatabase(path: db).connect()
        let sqlite = connection!
        // A bigger page cache only speeds up building the unique index on users.id.
        try sqlite.execute("PRAGMA cache_size = -262144")
        // connect() leaves its schema-version query stepped but not reset, which keeps a read
        // transaction open on this connection (and so blocks its checkpoints); asking for the cached
        // statement again resets it.
        _ = try sqlite.statement("SELECT max(version) FROM digest_schema")

        var random = BenchRandom(seed: seed)
        let localeChoices = locales.map { $0.split(separator: ",").map(String.init) } ?? Self.locales
        let weekEnd = Int64(week.next.monday.daysSinceEpoch) * 86_400
        let windowStart = weekEnd - 14 * 86_400
        let lastWeekStart = weekEnd - 7 * 86_400

        // Articles, sorted by publication; the first few come out in the window's first hour so that
        // every read (which starts after that hour) has something published before it.
        var published: [Int64] = (0..<articles).map { index in
            index < 8
                ? windowStart + Int64(random.below(3600))
                : windowStart + 3600 + Int64(random.below(14 * 86_400 - 2 * 3600))
        }
        published.sort()
        var minutes: [Int] = []
        try sqlite.transaction {
            let insert = try sqlite.statement(
                """
                INSERT INTO articles (pk, id, title, url, image_url, topics, published_at, reading_minutes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for index in 0..<articles {
                let language = Self.languages[index % Self.languages.count]
                let topicCount = random.inRange(1...3)
                var topics: [String] = []
                while topics.count < topicCount {
                    let topic = Self.topics[random.below(Self.topics.count)]
                    if !topics.contains(topic) { topics.append(topic) }
                }
                var json = JSONWriter(capacity: 64)
                json.beginArray()
                for topic in topics { json.value(topic) }
                json.endArray()
                let id = "a\(index + 1)"
                let reading = random.inRange(2...18)
                minutes.append(reading)
                insert.reset()
                insert.bind(Int64(index + 1), at: 1)
                insert.bind(id, at: 2)
                insert.bind(Self.title(language: language, topic: topics[0], random: &random), at: 3)
                insert.bind("https://news.digest.example/\(language)/\(id)", at: 4)
                insert.bind(random.chance(70) ? "https://images.digest.example/\(id).jpg" : nil, at: 5)
                insert.bind(json.string, at: 6)
                insert.bind(published[index], at: 7)
                insert.bind(reading, at: 8)
                try insert.run()
            }
        }

        // Reads per user: exponential around the mean (a few heavy readers, many light ones), then
        // nudged until the total is exactly --reads.
        let mean = Double(reads) / Double(users)
        var counts = [Int32](repeating: 0, count: users)
        var total = 0
        for index in 0..<users {
            let count = min(Int((-Foundation.log(random.unit()) * mean).rounded()), Int(mean * 20) + 1)
            counts[index] = Int32(count)
            total += count
        }
        while total != reads {
            let index = random.below(users)
            if total < reads {
                counts[index] += 1
                total += 1
            } else if counts[index] > 0 {
                counts[index] -= 1
                total -= 1
            }
        }

        let insertUser = try sqlite.statement(
            "INSERT INTO users (pk, id, locale, time_zone, opted_out) VALUES (?, ?, ?, ?, ?)")
        let insertDevice = try sqlite.statement("INSERT INTO devices (user_pk, token, platform) VALUES (?, ?, ?)")
        let insertRead = try sqlite.statement(
            "INSERT INTO reads (user_pk, read_at, article_pk, seconds) VALUES (?, ?, ?, ?)")
        var token = [UInt8](repeating: 0, count: 22 + 7 + 140)
        var times: [Int64] = []
        var devices = 0
        var lastReport = clock.seconds
        try sqlite.execute("BEGIN IMMEDIATE")
        for index in 0..<users {
            if index > 0 && index % usersPerTransaction == 0 {
                try sqlite.execute("COMMIT")
                if clock.seconds - lastReport >= 10 {
                    lastReport = clock.seconds
                    FileHandle.standardError.write(
                        Data("generate: \(index)/\(users) users, \(String(format: "%.0f", clock.seconds)) s\n".utf8))
                }
                try sqlite.execute("BEGIN IMMEDIATE")
            }
            let key = Int64(index + 1)
            var locale = localeChoices[random.below(localeChoices.count)]
            if random.chance(1) && locales == nil { locale = "fr-FR" }  // no templates: falls back to English
            var zone = Self.zones[random.below(Self.zones.count)]
            if random.below(500) == 0 { zone = "Mars/Olympus" }  // unknown: UTC
            insertUser.reset()
            insertUser.bind(key, at: 1)
            insertUser.bind("u\(index + 1)", at: 2)
            insertUser.bind(locale, at: 3)
            insertUser.bind(zone, at: 4)
            insertUser.bind(random.chance(2) ? 1 : 0, at: 5)
            try insertUser.run()

            let deviceCount = random.below(100) < 55 ? 1 : (random.below(100) < 65 ? 2 : 3)
            for _ in 0..<deviceCount {
                Self.fillToken(&token, random: &random)
                let roll = random.below(100)
                let platform: Platform = roll < 60 ? .android : (roll < 90 ? .ios : .web)
                insertDevice.reset()
                insertDevice.bind(key, at: 1)
                insertDevice.bindText(token, at: 2)
                insertDevice.bind(platform.rawValue, at: 3)
                try insertDevice.run()
            }
            devices += deviceCount

            // Reads: over both weeks, or (one user in ten) only the week before: re-engagement.
            let count = Int(counts[index])
            guard count > 0 else { continue }
            let from = windowStart + 3600
            let until = random.chance(10) ? lastWeekStart : weekEnd
            times.removeAll(keepingCapacity: true)
            for _ in 0..<count { times.append(from + Int64(random.below(Int(until - from)))) }
            times.sort()
            var previous = Int64.min
            for var at in times {
                if at <= previous { at = previous + 1 }  // the key (user, read_at, article) stays unique
                previous = at
                // Published before the read: mostly one of the ~60 latest, sometimes any.
                let available = Self.publishedBefore(at, in: published)
                let article = random.chance(70)
                    ? available - 1 - random.below(min(available, 60))
                    : random.below(available)
                insertRead.reset()
                insertRead.bind(key, at: 1)
                insertRead.bind(at, at: 2)
                insertRead.bind(Int64(article + 1), at: 3)
                insertRead.bind(random.inRange(20...(minutes[article] * 90)), at: 4)
                try insertRead.run()
            }
        }
        try sqlite.execute("COMMIT")
        let insertSeconds = clock.seconds
        try sqlite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        // Closing the last connection checkpoints what is left and removes the WAL: one file to copy.
        connection = nil
        _ = connection
        let size = (try? FileManager.default.attributesOfItem(atPath: db)[.size] as? Int) ?? 0
        print(
            """
            {"db": "\(db)", "week": "\(week)", "seed": \(seed), "users": \(users), "devices": \(devices), \
            "articles": \(articles), "reads": \(reads), "bytes": \(size), \
            "seconds": \(String(format: "%.2f", clock.seconds)), "insertSeconds": \(String(format: "%.2f", insertSeconds))}
            """)
    }

    /// How many articles (a prefix of `published`, which is sorted) came out before `instant`.
    static func publishedBefore(_ instant: Int64, in published: [Int64]) -> Int {
        var low = 0
        var high = published.count
        while low < high {
            let middle = (low + high) / 2
            if published[middle] < instant { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// An FCM-like registration token: 22 characters, `:APA91b`, 140 more (169 bytes).
    static func fillToken(_ token: inout [UInt8], random: inout BenchRandom) {
        var bits: UInt64 = 0
        var left = 0
        for index in token.indices {
            if index == 22 {
                token.replaceSubrange(22..<29, with: Array(":APA91b".utf8))
            }
            if (22..<29).contains(index) { continue }
            if left == 0 {
                bits = random.next()
                left = 10
            }
            token[index] = alphabet[Int(bits & 63)]
            bits >>= 6
            left -= 1
        }
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
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

    /// A headline in the article's language, sometimes with emoji, flags or template-like braces.
    static func title(language: String, topic: String, random: inout BenchRandom) -> String {
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
        let count = random.inRange(3...parts.count)
        var title = (parts.prefix(count) + [topic]).joined(separator: separator)
        switch random.below(10) {
        case 0: title += " 🚀"
        case 1: title = "👨‍👩‍👧‍👦 " + title
        case 2: title += " 🇵🇱🇺🇦"
        case 3: title += " {{notATag}}"
        default: break
        }
        return title
    }
}
