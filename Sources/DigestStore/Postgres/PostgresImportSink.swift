public import DigestCore
import PostgresNIO

/// Writes imported records into the `digest_import_*` tables behind the history views; re-importing
/// the same records changes nothing. A lost connection fails the import (run it again: it is
/// idempotent) rather than being retried inside an open batch.
public final class PostgresImportSink: HistoryImportSink {
    let session: PostgresSession
    private var queued: [QueuedRead] = []
    private var queuedUsers: [Reader] = []

    public init(database: PostgresDatabase) throws {
        let session = try PostgresSession(location: database.location, reconnectWindow: .zero)
        try PostgresSchema.requireCurrent(session)
        self.session = session
    }

    public func beginBatch() throws { try session.run("BEGIN") }

    public func commitBatch() throws { try session.run("COMMIT") }

    public func upsert(user: Reader) throws -> Bool {
        var changed = try session.run(
            """
            INSERT INTO digest_import_users (id, locale, time_zone, opted_out)
            VALUES (\(user.id), \(user.locale), \(user.timeZone), \(user.optedOut))
            ON CONFLICT (id) DO UPDATE SET locale = excluded.locale, time_zone = excluded.time_zone, opted_out = excluded.opted_out
            WHERE (digest_import_users.locale, digest_import_users.time_zone, digest_import_users.opted_out)
                IS DISTINCT FROM (excluded.locale, excluded.time_zone, excluded.opted_out)
            """) > 0
        let tokens = user.devices.map(\.token)
        changed = try session.run(
            "DELETE FROM digest_import_devices WHERE user_id = \(user.id) AND NOT (token = ANY(\(tokens)::text[]))") > 0 || changed
        for device in user.devices {
            changed = try session.run(
                """
                INSERT INTO digest_import_devices (user_id, token, platform) VALUES (\(user.id), \(device.token), \(device.platform.rawValue))
                ON CONFLICT (user_id, token) DO UPDATE SET platform = excluded.platform
                WHERE digest_import_devices.platform IS DISTINCT FROM excluded.platform
                """) > 0 || changed
        }
        return changed
    }

    public func upsert(article: Article) throws -> Bool {
        try session.run(
            """
            INSERT INTO digest_import_articles (id, title, url, image_url, topics, published_at, reading_minutes)
            VALUES (\(article.id), \(article.title), \(article.url), \(article.imageURL), \(article.topics)::text[],
                    to_timestamp(\(article.publishedAt)), \(article.readingMinutes))
            ON CONFLICT (id) DO UPDATE SET title = excluded.title, url = excluded.url, image_url = excluded.image_url,
                topics = excluded.topics, published_at = excluded.published_at, reading_minutes = excluded.reading_minutes
            WHERE (digest_import_articles.title, digest_import_articles.url, digest_import_articles.image_url,
                   digest_import_articles.topics, digest_import_articles.published_at, digest_import_articles.reading_minutes)
                IS DISTINCT FROM (excluded.title, excluded.url, excluded.image_url, excluded.topics, excluded.published_at,
                   excluded.reading_minutes)
            """) > 0
    }

    public func insertRead(userID: String, articleID: String, readAt: Int64, seconds: Int) throws -> ReadInsertOutcome {
        let rows = try session.rows(
            """
            WITH known_user AS (SELECT 1 FROM digest_import_users WHERE id = \(userID)),
                 known_article AS (SELECT 1 FROM digest_import_articles WHERE id = \(articleID)),
                 inserted AS (
                    INSERT INTO digest_import_reads (user_id, read_at, article_id, seconds)
                    SELECT \(userID), to_timestamp(\(readAt)), \(articleID), \(seconds)
                    WHERE EXISTS (SELECT 1 FROM known_user) AND EXISTS (SELECT 1 FROM known_article)
                    ON CONFLICT DO NOTHING RETURNING 1)
            SELECT EXISTS (SELECT 1 FROM known_user), EXISTS (SELECT 1 FROM known_article), EXISTS (SELECT 1 FROM inserted)
            """)
        guard let row = rows.first else { return .duplicate }
        let (userKnown, articleKnown, inserted) = try row.decode((Bool, Bool, Bool).self)
        if !userKnown { return .unknownUser }
        if !articleKnown { return .unknownArticle }
        return inserted ? .inserted : .duplicate
    }

    public var writesReadsInBulk: Bool { true }

    public func queueUser(_ user: Reader) throws { queuedUsers.append(user) }

    /// One statement for the batch's users and devices: upserts that change only what differs, and
    /// devices no longer listed removed. A user listed twice in a batch counts once, as last listed.
    public func flushUsers() throws -> (written: Int, unchanged: Int) {
        guard !queuedUsers.isEmpty else { return (0, 0) }
        defer { queuedUsers.removeAll(keepingCapacity: true) }
        var latest: [String: Int] = [:]
        for (index, user) in queuedUsers.enumerated() { latest[user.id] = index }
        let users = queuedUsers.indices.filter { latest[queuedUsers[$0].id] == $0 }.map { queuedUsers[$0] }
        var owners: [String] = [], tokens: [String] = [], platforms: [String] = []
        for user in users {
            var seen = Set<String>()
            for device in user.devices.reversed() where seen.insert(device.token).inserted {
                owners.append(user.id)
                tokens.append(device.token)
                platforms.append(device.platform.rawValue)
            }
        }
        let rows = try session.rows(
            """
            WITH upserted AS (
                INSERT INTO digest_import_users (id, locale, time_zone, opted_out)
                SELECT * FROM unnest(\(users.map(\.id))::text[], \(users.map(\.locale))::text[],
                                     \(users.map(\.timeZone))::text[], \(users.map(\.optedOut))::bool[])
                ON CONFLICT (id) DO UPDATE SET locale = excluded.locale, time_zone = excluded.time_zone, opted_out = excluded.opted_out
                WHERE (digest_import_users.locale, digest_import_users.time_zone, digest_import_users.opted_out)
                    IS DISTINCT FROM (excluded.locale, excluded.time_zone, excluded.opted_out)
                RETURNING id),
            listed AS (
                SELECT * FROM unnest(\(owners)::text[], \(tokens)::text[], \(platforms)::text[]) AS t(user_id, token, platform)),
            removed AS (
                DELETE FROM digest_import_devices d
                WHERE d.user_id = ANY(\(users.map(\.id))::text[])
                  AND NOT EXISTS (SELECT 1 FROM listed l WHERE l.user_id = d.user_id AND l.token = d.token)
                RETURNING d.user_id),
            added AS (
                INSERT INTO digest_import_devices (user_id, token, platform)
                SELECT user_id, token, platform FROM listed
                ON CONFLICT (user_id, token) DO UPDATE SET platform = excluded.platform
                WHERE digest_import_devices.platform IS DISTINCT FROM excluded.platform
                RETURNING user_id)
            SELECT count(*) FROM (SELECT id FROM upserted UNION SELECT user_id FROM removed UNION SELECT user_id FROM added) changed
            """)
        let changed = try rows.first?.decode(Int.self) ?? 0
        return (changed, queuedUsers.count - changed)
    }

    public func queueRead(_ read: QueuedRead) throws { queued.append(read) }

    /// One statement for the batch's reads: existence checks, the insert, and each line's outcome
    /// (the first of identical lines counts as written, the rest as unchanged).
    public func flushReads() throws -> [(read: QueuedRead, outcome: ReadInsertOutcome)] {
        guard !queued.isEmpty else { return [] }
        defer { queued.removeAll(keepingCapacity: true) }
        let rows = try session.rows(
            """
            WITH input AS (
                SELECT * FROM unnest(\(queued.indices.map { $0 })::int8[], \(queued.map(\.userID))::text[],
                                     \(queued.map(\.articleID))::text[], \(queued.map(\.readAt))::int8[],
                                     \(queued.map(\.seconds))::int8[]) AS t(i, u, a, at, s)),
            checked AS (
                SELECT i, u, a, to_timestamp(at) AS at, s,
                       EXISTS (SELECT 1 FROM digest_import_users x WHERE x.id = u) AS known_user,
                       EXISTS (SELECT 1 FROM digest_import_articles x WHERE x.id = a) AS known_article,
                       row_number() OVER (PARTITION BY u, a, at ORDER BY i) = 1 AS first
                FROM input),
            inserted AS (
                INSERT INTO digest_import_reads (user_id, read_at, article_id, seconds)
                SELECT u, at, a, s FROM checked WHERE known_user AND known_article AND first
                ON CONFLICT DO NOTHING
                RETURNING user_id, read_at, article_id)
            SELECT c.i, c.known_user, c.known_article,
                   c.first AND EXISTS (SELECT 1 FROM inserted x WHERE x.user_id = c.u AND x.article_id = c.a AND x.read_at = c.at)
            FROM checked c ORDER BY c.i
            """)
        return try rows.map { row in
            let (index, knownUser, knownArticle, inserted) = try row.decode((Int, Bool, Bool, Bool).self)
            let outcome: ReadInsertOutcome =
                !knownUser ? .unknownUser : !knownArticle ? .unknownArticle : inserted ? .inserted : .duplicate
            return (queued[index], outcome)
        }
    }
}
