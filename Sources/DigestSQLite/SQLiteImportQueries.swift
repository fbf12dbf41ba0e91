import DigestCore
import DigestStore

/// The statements behind ``SQLiteImportSink``: writes imported records into the SQLite tables, a
/// batch in one transaction; re-importing the same records changes nothing. Synchronous, on the
/// sink's own thread, where its connection lives.
final class SQLiteImportQueries {
    let connection: SQLiteConnection
    private var userKeys: [String: Int64] = [:]
    private var articleKeys: [String: Int64] = [:]
    private let cacheLimit = 1_000_000

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// Writes a batch in one transaction, records in order.
    func write(_ batch: ImportBatch) throws -> ImportBatchResult {
        try connection.transaction {
            var result = ImportBatchResult()
            func count(_ changed: Bool) {
                if changed { result.written += 1 } else { result.unchanged += 1 }
            }
            switch batch {
            case .users(let users):
                for user in users { count(try upsert(user: user)) }
            case .articles(let articles):
                for article in articles { count(try upsert(article: article)) }
            case .reads(let reads):
                for (index, read) in reads.enumerated() {
                    switch try insertRead(read) {
                    case .inserted: result.written += 1
                    case .duplicate: result.unchanged += 1
                    case .rejected(let reason): result.rejected.append(.init(index: index, reason: reason))
                    }
                }
            }
            return result
        }
    }

    /// What became of one read.
    private enum ReadOutcome {
        case inserted, duplicate
        case rejected(ImportBatchResult.Rejection.Reason)
    }

    private func upsert(user: Reader) throws -> Bool {
        // `seq` orders users for rolling runs (docs/001): a new user, one that moved zone or opted back in, and one
        // that gained a device take the next number, so the runs of weeks already under way find them.
        let upsert = try connection.statement(
            """
            INSERT INTO users (id, locale, time_zone, opted_out, seq)
            VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(seq), 0) + 1 FROM users))
            ON CONFLICT (id) DO UPDATE SET locale = ?2, time_zone = ?3, opted_out = ?4,
                seq = CASE WHEN time_zone IS NOT ?3 OR (opted_out AND NOT ?4) THEN (SELECT max(seq) + 1 FROM users) ELSE seq END
            WHERE locale IS NOT ?2 OR time_zone IS NOT ?3 OR opted_out IS NOT ?4
            """)
        let rowBefore = connection.lastInsertRowID
        upsert.bind([user.id, user.locale, user.timeZone, user.optedOut ? 1 : 0])
        try upsert.run()
        var changed = connection.changes > 0
        let inserted = connection.lastInsertRowID != rowBefore
        guard let key = try userKey(user.id) else { return changed }
        // Devices: remove the ones no longer listed, add the new ones.
        let tokens = SQLiteHistoryQueries.encodeTopics(user.devices.map(\.token))
        let remove = try connection.statement(
            "DELETE FROM devices WHERE user_pk = ? AND token NOT IN (SELECT value FROM json_each(?))")
        remove.bind(key, at: 1)
        remove.bind(tokens, at: 2)
        try remove.run()
        changed = changed || connection.changes > 0
        // One device, one reader: a token listed under another reader stays theirs only when they
        // registered it later (both dates known); otherwise this, the latest import line, takes it.
        let ownedElsewhere = try connection.statement(
            "SELECT 1 FROM devices WHERE token = ?1 AND user_pk <> ?2 AND registered_at > ?3 LIMIT 1")
        let leave = try connection.statement("DELETE FROM devices WHERE user_pk = ?2 AND token = ?1")
        let take = try connection.statement("DELETE FROM devices WHERE token = ?1 AND user_pk <> ?2")
        let insert = try connection.statement(
            "INSERT INTO devices (user_pk, token, platform, registered_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (user_pk, token) DO NOTHING")
        let existing = try connection.statement("SELECT registered_at FROM devices WHERE user_pk = ?1 AND token = ?2")
        let update = try connection.statement(
            """
            UPDATE devices SET platform = ?3, registered_at = ?4
            WHERE user_pk = ?1 AND token = ?2 AND (platform IS NOT ?3 OR registered_at IS NOT ?4)
            """)
        var gainedDevice = false
        for device in user.devices {
            ownedElsewhere.reset()
            ownedElsewhere.bind(device.token, at: 1)
            ownedElsewhere.bind(key, at: 2)
            ownedElsewhere.bind(device.registeredAt, at: 3)
            let kept = try ownedElsewhere.step()
            ownedElsewhere.reset()
            let settle = kept ? leave : take
            settle.reset()
            settle.bind(device.token, at: 1)
            settle.bind(key, at: 2)
            try settle.run()
            if kept {
                changed = changed || connection.changes > 0
                continue
            }
            insert.reset()
            insert.bind([key, device.token, device.platform.rawValue])
            insert.bind(device.registeredAt, at: 4)
            try insert.run()
            if connection.changes > 0 {
                gainedDevice = true
                continue
            }
            existing.reset()
            existing.bind(key, at: 1)
            existing.bind(device.token, at: 2)
            let before: Int64? = try existing.step() && !existing.isNull(0) ? existing.int64(0) : nil
            existing.reset()
            update.reset()
            update.bind([key, device.token, device.platform.rawValue])
            update.bind(device.registeredAt, at: 4)
            try update.run()
            changed = changed || connection.changes > 0
            // A later registration counts as a new device: a token FCM called dead may be alive again.
            if let registered = device.registeredAt, registered > before ?? .min { gainedDevice = true }
        }
        if gainedDevice && !inserted {
            let bump = try connection.statement("UPDATE users SET seq = (SELECT max(seq) + 1 FROM users) WHERE pk = ?")
            bump.bind(key, at: 1)
            try bump.run()
        }
        changed = changed || gainedDevice
        return changed
    }

    private func upsert(article: Article) throws -> Bool {
        let upsert = try connection.statement(
            """
            INSERT INTO articles (id, title, url, image_url, topics, published_at, reading_minutes, language)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (id) DO UPDATE SET title = ?2, url = ?3, image_url = ?4, topics = ?5, published_at = ?6,
                reading_minutes = ?7, language = ?8
            WHERE title IS NOT ?2 OR url IS NOT ?3 OR image_url IS NOT ?4 OR topics IS NOT ?5
                OR published_at IS NOT ?6 OR reading_minutes IS NOT ?7 OR language IS NOT ?8
            """)
        upsert.bind([
            article.id, article.title, article.url, article.imageURL,
            SQLiteHistoryQueries.encodeTopics(article.topics), article.publishedAt, article.readingMinutes,
            article.language,
        ])
        try upsert.run()
        return connection.changes > 0
    }

    private func insertRead(_ read: ImportedRead) throws -> ReadOutcome {
        guard let user = try userKey(read.userID) else { return .rejected(.unknownUser) }
        guard let article = try articleKey(read.articleID) else { return .rejected(.unknownArticle) }
        let insert = try connection.statement(
            "INSERT INTO reads (user_pk, read_at, article_pk, seconds) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
        insert.bind([user, read.readAt, article, read.seconds])
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
