import DigestCore
import DigestStore
import Foundation

/// The queries behind ``SQLiteHistoryReader`` over the tables `users`, `devices`, `articles` and
/// `reads`: synchronous, on the reader's own thread, where its connection lives.
final class SQLiteHistoryQueries {
    let connection: SQLiteConnection
    /// Article id, topics and language by key, for resolving reads without a join per row.
    private var articleCache: [Int64: (id: String, topics: [String], language: String?)] = [:]
    /// Keys of the articles ``articles(publishedFrom:until:)`` returned, by id.
    private var articleKeys: [String: Int64] = [:]
    private let articleCacheLimit = 500_000

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    func users(after key: Int64, limit: Int) throws -> [StoredReader] {
        let statement = try connection.statement(
            "SELECT pk, id, locale, time_zone, opted_out FROM users WHERE pk > ? ORDER BY pk LIMIT ?")
        statement.bind(key, at: 1)
        statement.bind(limit, at: 2)
        var users: [StoredReader] = []
        users.reserveCapacity(limit)
        while try statement.step() {
            users.append(Self.storedReader(statement))
        }
        guard let first = users.first, let last = users.last else { return [] }
        let devices = try connection.statement(
            "SELECT user_pk, token, platform FROM devices WHERE user_pk >= ? AND user_pk <= ? ORDER BY user_pk, token")
        devices.bind(first.key, at: 1)
        devices.bind(last.key, at: 2)
        var index = 0
        while try devices.step() {
            let owner = devices.int64(0)
            while index < users.count && users[index].key < owner { index += 1 }
            guard index < users.count, users[index].key == owner,
                let platform = Platform(rawValue: devices.string(2))
            else { continue }
            users[index].reader.devices.append(Device(token: devices.string(1), platform: platform))
        }
        return users
    }

    func reads(of users: [StoredReader], since: [Int64]) throws -> [[ReadEvent]] {
        let statement = try connection.statement(
            "SELECT read_at, article_pk, seconds FROM reads WHERE user_pk = ? AND read_at >= ? ORDER BY read_at")
        var result: [[ReadEvent]] = []
        result.reserveCapacity(users.count)
        for (user, start) in zip(users, since) {
            statement.reset()
            statement.bind(user.key, at: 1)
            statement.bind(start, at: 2)
            var reads: [ReadEvent] = []
            while try statement.step() {
                let article = try self.article(statement.int64(1))
                reads.append(
                    ReadEvent(
                        articleID: article.id, topics: article.topics, readAt: statement.int64(0),
                        seconds: statement.int(2), language: article.language))
            }
            result.append(reads)
        }
        return result
    }

    private func article(_ key: Int64) throws -> (id: String, topics: [String], language: String?) {
        if let hit = articleCache[key] { return hit }
        let statement = try connection.statement("SELECT id, topics, language FROM articles WHERE pk = ?")
        statement.bind(key, at: 1)
        let value: (id: String, topics: [String], language: String?)
        if try statement.step() {
            value = (statement.string(0), Self.decodeTopics(statement.string(1)), statement.optionalString(2))
        } else {
            value = ("", [], nil)
        }
        statement.reset()
        if articleCache.count >= articleCacheLimit { articleCache.removeAll(keepingCapacity: true) }
        articleCache[key] = value
        return value
    }

    func articles(publishedFrom from: Int64, until: Int64) throws -> [Article] {
        let statement = try connection.statement(
            """
            SELECT id, title, url, image_url, topics, published_at, reading_minutes, language, pk
            FROM articles WHERE published_at >= ? AND published_at < ? ORDER BY published_at DESC, id
            """)
        statement.bind(from, at: 1)
        statement.bind(until, at: 2)
        var articles: [Article] = []
        while try statement.step() {
            let article = Article(
                id: statement.string(0), title: statement.string(1), url: statement.string(2),
                imageURL: statement.optionalString(3), topics: Self.decodeTopics(statement.string(4)),
                publishedAt: statement.int64(5), readingMinutes: statement.int(6), language: statement.optionalString(7))
            articleKeys[article.id] = statement.int64(8)
            articles.append(article)
        }
        return articles
    }

    /// One look-up of the reads index per article (`reads_article`: article, then user), over the
    /// users' key range; a batch's users are consecutive keys.
    func earlierReads(of users: [StoredReader], among articles: [String], before: Int64) throws -> [Set<String>] {
        var result = [Set<String>](repeating: [], count: users.count)
        guard let first = users.first?.key, let last = users.last?.key, !articles.isEmpty else { return result }
        var position: [Int64: Int] = [:]
        position.reserveCapacity(users.count)
        for (index, user) in users.enumerated() { position[user.key] = index }
        let reads = try connection.statement(
            "SELECT user_pk FROM reads WHERE article_pk = ? AND user_pk >= ? AND user_pk <= ? AND read_at < ?")
        let key = try connection.statement("SELECT pk FROM articles WHERE id = ?")
        for id in articles {
            var articleKey = articleKeys[id]
            if articleKey == nil {
                key.reset()
                key.bind(id, at: 1)
                guard try key.step() else { continue }
                articleKey = key.int64(0)
                articleKeys[id] = articleKey
            }
            reads.reset()
            reads.bind(articleKey!, at: 1)
            reads.bind(first, at: 2)
            reads.bind(last, at: 3)
            reads.bind(before, at: 4)
            while try reads.step() {
                if let index = position[reads.int64(0)] { result[index].insert(id) }
            }
        }
        key.reset()
        reads.reset()
        return result
    }

    /// The picks the ledger kept per user and week (`digest_picks`, keyed by user and week).
    func recentPicks(of users: [StoredReader], weeks: [ISOWeek]) throws -> [Set<String>] {
        guard !weeks.isEmpty else { return users.map { _ in [] } }
        let weekList = weeks.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
        let statement = try connection.statement(
            "SELECT value FROM digest_picks, json_each(digest_picks.picks) WHERE user_id = ?1 AND week IN (\(weekList))")
        for (index, week) in weeks.enumerated() { statement.bind(week.description, at: Int32(index + 2)) }
        var result: [Set<String>] = []
        result.reserveCapacity(users.count)
        for user in users {
            statement.reset()
            statement.bind(user.reader.id, at: 1)
            var picks = Set<String>()
            while try statement.step() { picks.insert(statement.string(0)) }
            result.append(picks)
        }
        statement.reset()
        return result
    }

    func countUsers(after key: Int64) throws -> Int {
        let statement = try connection.statement("SELECT count(*) FROM users WHERE pk > ?")
        statement.bind(key, at: 1)
        defer { statement.reset() }
        return try statement.step() ? statement.int(0) : 0
    }

    func hasReads(from: Int64, until: Int64) throws -> Bool {
        // reads is keyed by user first; an index-free scan stops at the first hit.
        let statement = try connection.statement("SELECT 1 FROM reads WHERE read_at >= ? AND read_at < ? LIMIT 1")
        statement.bind(from, at: 1)
        statement.bind(until, at: 2)
        let found = try statement.step()
        statement.reset()
        return found
    }

    func user(id: String) throws -> StoredReader? {
        try users(where: "id = ?1", bind: id, limit: 1).first
    }

    func users(idPrefix prefix: String, limit: Int) throws -> [StoredReader] {
        // A range on the unique index instead of LIKE, which would not use it.
        try users(where: "id >= ?1 AND id < ?1 || char(1114111)", bind: prefix, limit: limit)
    }

    private func users(where condition: String, bind value: String, limit: Int) throws -> [StoredReader] {
        let statement = try connection.statement(
            "SELECT pk, id, locale, time_zone, opted_out FROM users WHERE \(condition) ORDER BY id LIMIT ?2")
        statement.bind(value, at: 1)
        statement.bind(limit, at: 2)
        var users: [StoredReader] = []
        while try statement.step() {
            users.append(Self.storedReader(statement))
        }
        let devices = try connection.statement("SELECT token, platform FROM devices WHERE user_pk = ? ORDER BY token")
        for index in users.indices {
            devices.reset()
            devices.bind(users[index].key, at: 1)
            while try devices.step() {
                guard let platform = Platform(rawValue: devices.string(1)) else { continue }
                users[index].reader.devices.append(Device(token: devices.string(0), platform: platform))
            }
        }
        return users
    }

    /// A user from a row of `SELECT pk, id, locale, time_zone, opted_out FROM users`, devices to come.
    private static func storedReader(_ statement: SQLiteStatement) -> StoredReader {
        StoredReader(
            key: statement.int64(0),
            reader: Reader(
                id: statement.string(1), locale: statement.string(2), timeZone: statement.string(3),
                optedOut: statement.int64(4) != 0, devices: []))
    }

    static func encodeTopics(_ topics: [String]) -> String {
        var writer = JSONWriter(capacity: 64)
        writer.beginArray()
        for topic in topics { writer.value(topic) }
        writer.endArray()
        return writer.string
    }

    static func decodeTopics(_ text: String) -> [String] {
        (try? JSONDecoder().decode([String].self, from: Data(text.utf8))) ?? []
    }
}
