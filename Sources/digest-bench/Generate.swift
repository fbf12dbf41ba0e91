import ArgumentParser
import DigestCore
import DigestDemo
import DigestSQLite
import DigestStore
import Foundation

/// `digest-bench generate`: a large, deterministic reading history (the demo's `DemoHistory`) written
/// straight into a SQLite file with the project's schema (users, devices, articles with languages,
/// reads over four weeks), and the two previous weeks' digests (one sent outbox row per user and
/// week, whose report lists five picks, and those picks in `digest_picks`), for `digest run` to
/// chew on.
struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a deterministic history (users, devices, articles, reads) into a new SQLite file.")

    @Option(help: "The SQLite file to create (replaced if it exists).")
    var db: String

    @Option(help: "Number of users.")
    var users: Int

    @Option(help: "Number of reads in all, spread over the weeks.")
    var reads: Int

    @Option(help: "Weeks of reads, the digest's week the last.")
    var weeks: Int = 4

    @Option(help: "Previous weeks whose digests (their picks) the outbox holds.")
    var previousDigests: Int = 2

    @Option(help: "The ISO week the run will digest, e.g. 2026-W46.")
    var week: String

    @Option(help: "Number of articles, published over the weeks.")
    var articles: Int = 800

    @Option(help: "Seed of the generator: the same seed gives the same file.")
    var seed: UInt64 = 2026

    @Option(help: "Users per transaction.")
    var usersPerTransaction: Int = 20_000

    @Option(help: "Comma-separated locales to draw users' locales from (default: en, pl, ru, zh-Hans and regional variants, 1% fr-FR).")
    var locales: String?

    @Option(
        help: ArgumentHelp(
            "Percent of users with preferences (0–100): of those, half mute a topic or two, two in five follow one or two, one in three reads every 2 or 4 weeks.",
            valueName: "percent"))
    var preferences: Int = 0

    func validate() throws {
        guard (0...100).contains(preferences) else { throw ValidationError("--preferences must be 0…100 (percent of users)") }
        guard users > 0, reads >= 0, articles >= 16, weeks >= 2, previousDigests >= 0 else {
            throw ValidationError("--users must be positive, --reads not negative, --articles at least 16, --weeks at least 2")
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

        var history = DemoHistory(
            week: week, weeks: weeks, users: users, reads: reads, articles: articles, seed: seed,
            locales: locales.map { $0.split(separator: ",").map(String.init) })
        try sqlite.transaction {
            let insert = try sqlite.statement(
                """
                INSERT INTO articles (pk, id, title, url, image_url, topics, published_at, reading_minutes, language)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for (index, article) in history.articles.enumerated() {
                var json = JSONWriter(capacity: 64)
                json.beginArray()
                for topic in article.topics { json.value(topic) }
                json.endArray()
                insert.reset()
                insert.bind(Int64(index + 1), at: 1)
                insert.bind(article.id, at: 2)
                insert.bind(article.title, at: 3)
                insert.bind(article.url, at: 4)
                insert.bind(article.imageURL, at: 5)
                insert.bind(json.string, at: 6)
                insert.bind(article.publishedAt, at: 7)
                insert.bind(article.readingMinutes, at: 8)
                insert.bind(article.language, at: 9)
                try insert.run()
            }
        }

        let insertUser = try sqlite.statement(
            "INSERT INTO users (pk, id, locale, time_zone, opted_out) VALUES (?, ?, ?, ?, ?)")
        let insertDevice = try sqlite.statement("INSERT INTO devices (user_pk, token, platform) VALUES (?, ?, ?)")
        // Preferences as the store keeps them (users.pref_*), stored once (version 1).
        let setPreferences = try sqlite.statement(
            "UPDATE users SET pref_every = ?, pref_from = ?, pref_follow = ?, pref_mute = ?, pref_version = 1 WHERE pk = ?")
        var chooser = SplitMix64(seed: seed ^ 0x5EED_0F_C401CE)
        var withPreferences = 0
        let insertRead = try sqlite.statement(
            "INSERT INTO reads (user_pk, read_at, article_pk, seconds) VALUES (?, ?, ?, ?)")
        let insertDigest = try sqlite.statement(
            """
            INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, state,
                                       attempts, created_at, sent_at)
            VALUES (?, ?, ?, 'android', 'BigText', '{}', ?, ?, 'sent', 1, ?, ?)
            """)
        let insertPicks = try sqlite.statement("INSERT INTO digest_picks (user_id, week, picks) VALUES (?, ?, ?)")
        var previousWeeks: [ISOWeek] = []
        for _ in 0..<previousDigests { previousWeeks.append((previousWeeks.last ?? week).previous) }
        var picker = SplitMix64(seed: seed ^ 0x9E37_79B9)
        var digests = 0
        var devices = 0
        var lastReport = clock.seconds
        try sqlite.execute("BEGIN IMMEDIATE")
        while let user = history.nextUser() {
            let index = user.index
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
            insertUser.reset()
            insertUser.bind(key, at: 1)
            insertUser.bind(user.reader.id, at: 2)
            insertUser.bind(user.reader.locale, at: 3)
            insertUser.bind(user.reader.timeZone, at: 4)
            insertUser.bind(user.reader.optedOut ? 1 : 0, at: 5)
            try insertUser.run()
            if preferences > 0 && chooser.next(below: 100) < preferences {
                let topics = DemoVocabulary.topics
                func someTopics() -> String {
                    let first = topics[chooser.next(below: topics.count)]
                    guard chooser.next(below: 2) == 0 else { return first }
                    let second = topics[chooser.next(below: topics.count)]
                    return second == first ? first : first + "\n" + second
                }
                let mute = chooser.next(below: 2) == 0 ? someTopics() : nil
                let follow = chooser.next(below: 5) < 2 ? someTopics() : nil
                let every: Int64 = chooser.next(below: 3) == 0 ? (chooser.next(below: 2) == 0 ? 2 : 4) : 1
                // The pace counts from one of the last `every` weeks: some are due this week, some not.
                var from = week
                for _ in 0..<chooser.next(below: Int(every)) { from = from.previous }
                setPreferences.reset()
                setPreferences.bind(every, at: 1)
                setPreferences.bind(every > 1 ? from.description : nil, at: 2)
                setPreferences.bind(follow, at: 3)
                setPreferences.bind(mute, at: 4)
                setPreferences.bind(key, at: 5)
                try setPreferences.run()
                withPreferences += 1
            }

            for device in user.reader.devices {
                insertDevice.reset()
                insertDevice.bind(key, at: 1)
                insertDevice.bind(device.token, at: 2)
                insertDevice.bind(device.platform.rawValue, at: 3)
                try insertDevice.run()
            }
            devices += user.reader.devices.count

            // Last weeks' digests: five picks each, from the catalogue.
            if !user.reader.devices.isEmpty && !user.reader.optedOut {
                for previous in previousWeeks {
                    var report = JSONWriter(capacity: 128)
                    report.beginObject()
                    report.field("variant", "BigText")
                    report.key("picks")
                    var picks = JSONWriter(capacity: 64)
                    picks.beginArray()
                    for _ in 0..<5 { picks.value(history.articles[Int(picker.next(below: history.articles.count))].id) }
                    picks.endArray()
                    report.raw(picks.bytes)
                    report.endObject()
                    insertPicks.reset()
                    insertPicks.bind(user.reader.id, at: 1)
                    insertPicks.bind(previous.description, at: 2)
                    insertPicks.bind(picks.string, at: 3)
                    try insertPicks.run()
                    let due = Int64(previous.next.monday.daysSinceEpoch) * 86_400 + 9 * 3600
                    insertDigest.reset()
                    insertDigest.bind("\(previous):\(user.reader.id):\(OutboxMessage.tokenHash(user.reader.devices[0].token))", at: 1)
                    insertDigest.bind(previous.description, at: 2)
                    insertDigest.bind(user.reader.id, at: 3)
                    insertDigest.bind(report.string, at: 4)
                    insertDigest.bind(due, at: 5)
                    insertDigest.bind(due - 3600, at: 6)
                    insertDigest.bind(due, at: 7)
                    try insertDigest.run()
                    digests += 1
                }
            }

            for read in user.reads {
                insertRead.reset()
                insertRead.bind(key, at: 1)
                insertRead.bind(read.readAt, at: 2)
                insertRead.bind(Int64(read.article + 1), at: 3)
                insertRead.bind(read.seconds, at: 4)
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
            "articles": \(articles), "reads": \(reads), "withPreferences": \(withPreferences), "weeks": \(weeks), "previousDigests": \(digests), "bytes": \(size), \
            "seconds": \(String(format: "%.2f", clock.seconds)), "insertSeconds": \(String(format: "%.2f", insertSeconds))}
            """)
    }
}
