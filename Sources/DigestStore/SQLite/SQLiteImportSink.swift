public import DigestCore

/// Writes imported records into the SQLite tables; re-importing the same records changes nothing.
public final class SQLiteImportSink: HistoryImportSink {
    let connection: SQLiteConnection
    private var userKeys: [String: Int64] = [:]
    private var articleKeys: [String: Int64] = [:]
    private let cacheLimit = 1_000_000

    public init(database: SQLiteDatabase) throws {
        self.connection = try database.connect()
    }

    public func beginBatch() throws { try connection.execute("BEGIN IMMEDIATE") }

    public func commitBatch() throws { try connection.execute("COMMIT") }

    public func upsert(user: Reader) throws -> Bool {
        let upsert = try connection.statement(
            """
            INSERT INTO users (id, locale, time_zone, opted_out) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (id) DO UPDATE SET locale = ?2, time_zone = ?3, opted_out = ?4
            WHERE locale IS NOT ?2 OR time_zone IS NOT ?3 OR opted_out IS NOT ?4
            """)
        upsert.bind([user.id, user.locale, user.timeZone, user.optedOut ? 1 : 0])
        try upsert.run()
        var changed = connection.changes > 0
        guard let key = try userKey(user.id) else { return changed }
        // Devices: remove the ones no longer listed, add the new ones.
        let tokens = SQLiteHistoryReader.encodeTopics(user.devices.map(\.token))
        let remove = try connection.statement(
            "DELETE FROM devices WHERE user_pk = ? AND token NOT IN (SELECT value FROM json_each(?))")
        remove.bind(key, at: 1)
        remove.bind(tokens, at: 2)
        try remove.run()
        changed = changed || connection.changes > 0
        let insert = try connection.statement(
            """
            INSERT INTO devices (user_pk, token, platform) VALUES (?1, ?2, ?3)
            ON CONFLICT (user_pk, token) DO UPDATE SET platform = ?3 WHERE platform IS NOT ?3
            """)
        for device in user.devices {
            insert.reset()
            insert.bind([key, device.token, device.platform.rawValue])
            try insert.run()
            changed = changed || connection.changes > 0
        }
        return changed
    }

    public func upsert(article: Article) throws -> Bool {
        let upsert = try connection.statement(
            """
            INSERT INTO articles (id, title, url, image_url, topics, published_at, reading_minutes)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (id) DO UPDATE SET title = ?2, url = ?3, image_url = ?4, topics = ?5, published_at = ?6,
                reading_minutes = ?7
            WHERE title IS NOT ?2 OR url IS NOT ?3 OR image_url IS NOT ?4 OR topics IS NOT ?5
                OR published_at IS NOT ?6 OR reading_minutes IS NOT ?7
            """)
        upsert.bind([
            article.id, article.title, article.url, article.imageURL,
            SQLiteHistoryReader.encodeTopics(article.topics), article.publishedAt, article.readingMinutes,
        ])
        try upsert.run()
        return connection.changes > 0
    }

    public func insertRead(userID: String, articleID: String, readAt: Int64, seconds: Int) throws -> ReadInsertOutcome {
        guard let user = try userKey(userID) else { return .unknownUser }
        guard let article = try articleKey(articleID) else { return .unknownArticle }
        let insert = try connection.statement(
            "INSERT INTO reads (user_pk, read_at, article_pk, seconds) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
        insert.bind([user, readAt, article, seconds])
        try insert.run()
        return connection.changes > 0 ? .inserted : .duplicate
    }

    private func userKey(_ id: String) throws -> Int64? {
        try key(of: id, in: &userKeys, sql: "SELECT pk FROM users WHERE id = ?")
    }

    private func articleKey(_ id: String) throws -> Int64? {
        try key(of: id, in: &articleKeys, sql: "SELECT pk FROM articles WHERE id = ?")
    }

    /// The row key of an id, from a bounded cache or the table.
    private func key(of id: String, in cache: inout [String: Int64], sql: String) throws -> Int64? {
        if let key = cache[id] { return key }
        let statement = try connection.statement(sql)
        statement.bind(id, at: 1)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let key = statement.int64(0)
        if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
        cache[id] = key
        return key
    }
}
