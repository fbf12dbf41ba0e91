import DigestCore
import DigestStore
import Foundation

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

    /// Writes a batch in one transaction, records in order, at `now` (the import's clock: when
    /// preference changes are recorded, and the week a new pace counts from).
    func write(_ batch: ImportBatch, at now: Int64) throws -> ImportBatchResult {
        try connection.transaction {
            var result = ImportBatchResult()
            func count(_ changed: Bool) {
                if changed { result.written += 1 } else { result.unchanged += 1 }
            }
            switch batch {
            case .users(let users):
                for user in users { count(try upsert(user: user, at: now)) }
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

    private func upsert(user imported: ImportedUser, at now: Int64) throws -> Bool {
        let user = imported.reader
        // What the line says of preferences and `off` (nil: as stored), against what is stored: read
        // only when it says something.
        let says = imported.preferences != nil || imported.off != nil
        let before = says ? try SQLitePreferences.stored(connection, id: user.id) : nil
        // `seq` orders users for rolling runs (docs/001): a new user, one that moved zone or opted back in, and one
        // that gained a device take the next number, so the runs of weeks already under way find them.
        let upsert = try connection.statement(
            """
            INSERT INTO users (id, locale, time_zone, opted_out, seq)
            VALUES (?1, ?2, ?3, coalesce(?4, 0), (SELECT coalesce(max(seq), 0) + 1 FROM users))
            ON CONFLICT (id) DO UPDATE SET locale = ?2, time_zone = ?3, opted_out = coalesce(?4, opted_out),
                seq = CASE WHEN time_zone IS NOT ?3 OR (opted_out AND NOT coalesce(?4, opted_out)) THEN (SELECT max(seq) + 1 FROM users)
                      ELSE seq END
            WHERE locale IS NOT ?2 OR time_zone IS NOT ?3 OR opted_out IS NOT coalesce(?4, opted_out)
            """)
        let rowBefore = connection.lastInsertRowID
        upsert.bind([user.id, user.locale, user.timeZone, imported.off.map { $0 ? 1 : 0 }])
        try upsert.run()
        var changed = connection.changes > 0
        let inserted = connection.lastInsertRowID != rowBefore
        guard let key = try userKey(user.id) else { return changed }
        if says {
            // `off` is written above; the rest of the preferences, their version and the change here.
            let stored = before?.stored ?? StoredPreferences(preferences: ReaderPreferences(), version: 0)
            var after = stored.preferences
            if let given = imported.preferences {
                after = given.resolvingFrom(stored: stored.preferences, currentWeek: ISOWeek(utcInstant: now))
            }
            if let off = imported.off { after.off = off }
            // Only a press changes "fewer": an import keeps what is stored.
            after.fewer = stored.preferences.fewer
            let result = try SQLitePreferences.change(
                connection, key: key, from: stored, to: after, writeOff: false, source: .import, messageID: nil, at: now)
            changed = changed || result != stored
        }
        // Devices: remove the ones no longer listed, add the new ones.
        let tokens = SQLiteHistoryQueries.encodeTopics(user.devices.map(\.token))
        let remove = try connection.statement(
            "DELETE FROM devices WHERE user_pk = ? AND token NOT IN (SELECT value FROM json_each(?)) RETURNING token")
        remove.bind(key, at: 1)
        remove.bind(tokens, at: 2)
        var removed: [String] = []
        while try remove.step() { removed.append(remove.string(0)) }
        remove.reset()
        for token in removed { try depart(token: token, from: user.id) }
        changed = changed || !removed.isEmpty
        // One device, one reader: a token listed under another reader stays theirs only when they
        // registered it later (both dates known); otherwise this, the latest import line, takes it.
        let ownedElsewhere = try connection.statement(
            "SELECT 1 FROM devices WHERE token = ?1 AND user_pk <> ?2 AND registered_at > ?3 LIMIT 1")
        let leave = try connection.statement("DELETE FROM devices WHERE user_pk = ?2 AND token = ?1 RETURNING user_pk")
        let take = try connection.statement("DELETE FROM devices WHERE token = ?1 AND user_pk <> ?2 RETURNING user_pk")
        let owner = try connection.statement("SELECT id FROM users WHERE pk = ?")
        // A device's place in the list (`list_position`) orders the undated ones when the reader has more
        // devices than a run sends to (`DeviceSelection`).
        let insert = try connection.statement(
            """
            INSERT INTO devices (user_pk, token, platform, registered_at, list_position, provider, topic, keys_p256dh, keys_auth)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            ON CONFLICT (user_pk, token) DO NOTHING
            """)
        let existing = try connection.statement("SELECT registered_at FROM devices WHERE user_pk = ?1 AND token = ?2")
        let update = try connection.statement(
            """
            UPDATE devices SET platform = ?3, registered_at = ?4, list_position = ?5, provider = ?6, topic = ?7,
                keys_p256dh = ?8, keys_auth = ?9
            WHERE user_pk = ?1 AND token = ?2
              AND (platform IS NOT ?3 OR registered_at IS NOT ?4 OR list_position IS NOT ?5 OR provider IS NOT ?6 OR topic IS NOT ?7
                   OR keys_p256dh IS NOT ?8 OR keys_auth IS NOT ?9)
            """)
        var gainedDevice = false
        for (position, device) in user.devices.enumerated() {
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
            var losers: [Int64] = []
            while try settle.step() { losers.append(settle.int64(0)) }
            settle.reset()
            for loser in losers {
                owner.reset()
                owner.bind(loser, at: 1)
                if try owner.step() { try depart(token: device.token, from: owner.string(0)) }
                owner.reset()
            }
            if kept {
                changed = changed || !losers.isEmpty
                continue
            }
            insert.reset()
            insert.bind([key, device.token, device.platform.rawValue])
            insert.bind(device.registeredAt, at: 4)
            insert.bind(position, at: 5)
            insert.bind(device.provider.rawValue, at: 6)
            insert.bind(device.topic, at: 7)
            insert.bind(device.subscriptionKeys?.p256dh, at: 8)
            insert.bind(device.subscriptionKeys?.auth, at: 9)
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
            update.bind(position, at: 5)
            update.bind(device.provider.rawValue, at: 6)
            update.bind(device.topic, at: 7)
            update.bind(device.subscriptionKeys?.p256dh, at: 8)
            update.bind(device.subscriptionKeys?.auth, at: 9)
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

    /// A token left a reader (no longer listed, or taken by another): from now on every message to it
    /// carries its `token_key`, and so do the reader's messages to it in the weeks a run can still walk
    /// (running, started in the last five weeks, or the latest), so the outbox's unique index sees both
    /// sides of the move (docs/001, "One device, one reader").
    private func depart(token: String, from userID: String) throws {
        let hash = OutboxMessage.tokenHash(token)
        let now = Int64(Date().timeIntervalSince1970)
        let record = try connection.statement(
            """
            INSERT INTO digest_departed_tokens (token_hash, left_at) VALUES (?1, ?2)
            ON CONFLICT (token_hash) DO UPDATE SET left_at = ?2
            """)
        record.bind(hash, at: 1)
        record.bind(now, at: 2)
        try record.run()
        let key = try connection.statement(
            """
            UPDATE OR IGNORE digest_outbox SET token_key = week || ':' || ?2
            WHERE token_key IS NULL AND dedupe_key IN (
                SELECT week || ':' || ?1 || ':' || ?2 FROM digest_runs
                WHERE state = 'running' OR started_at >= ?3 OR week = (SELECT max(week) FROM digest_runs))
            """)
        key.bind(userID, at: 1)
        key.bind(hash, at: 2)
        key.bind(now - 35 * 86_400, at: 3)
        try key.run()
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
