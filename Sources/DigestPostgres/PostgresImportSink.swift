import DigestCore
public import DigestStore
import Foundation
import PostgresNIO

/// Writes imported records into the `digest_import_*` tables behind the history views; re-importing
/// the same records changes nothing. Each batch is one transaction. A lost connection fails the
/// import (run it again: it is idempotent) rather than being retried.
public final class PostgresImportSink: HistoryImportSink {
    let pool: PostgresPool

    init(pool: PostgresPool) {
        self.pool = pool
    }

    /// ``write(_:at:)`` at the wall clock's time.
    public func write(_ batch: ImportBatch) async throws -> ImportBatchResult {
        try await write(batch, at: Int64(Date().timeIntervalSince1970))
    }

    /// Writes one batch by the import's clock: `now` is when the changes of preferences it makes are
    /// recorded, and its ISO week (UTC) is the week a pace it stores without `from` counts from.
    public func write(_ batch: ImportBatch, at now: Int64) async throws -> ImportBatchResult {
        guard batch.count > 0 else { return ImportBatchResult() }
        return try await pool.transaction { connection in
            switch batch {
            case .users(let users): try await Self.write(users: users, at: now, on: connection)
            case .articles(let articles): try await Self.write(articles: articles, on: connection)
            case .reads(let reads): try await Self.write(reads: reads, on: connection)
            }
        }
    }

    /// One statement for the batch's users and devices: upserts that change only what differs, and
    /// devices no longer listed removed. A user added, moved to another zone, opted back in or given a
    /// new device takes the next `seq` (rolling runs, docs/005). A user listed twice in a batch counts once, as last listed
    /// (their preferences and `off` as the lines say them in turn: a later line's `nil` keeps an earlier line's value).
    ///
    /// Preferences (docs/005, "Reader preferences"): the batch's readers' rows are locked first, in id
    /// order (as ``PostgresDatabase/setPreferences(of:to:ifVersion:source:messageID:at:)`` locks its
    /// reader's), and what they have read after; a line's `preferences` replace the stored ones whole
    /// (`from` resolved by the week of `at` in UTC), none keeps them, and `off` set or kept likewise.
    /// Each reader whose preferences changed (`off` included) gets the next version and a change
    /// recorded as source `import` at `at`, in the batch's transaction. While the views are the
    /// publisher's own, a batch with `preferences` fails (they are the publisher's to store), and `off`
    /// is written to `digest_import_users` as before with no version or change.
    static func write(users imported: [ImportedUser], at: Int64, on connection: PostgresConnection) async throws -> ImportBatchResult {
        let records = imported.map(\.reader)
        var said: [String: (preferences: ReaderPreferences?, off: Bool?)] = [:]
        for user in imported {
            var line = said[user.reader.id] ?? (nil, nil)
            if let preferences = user.preferences { line.preferences = preferences }
            if let off = user.off { line.off = off }
            said[user.reader.id] = line
        }
        var latest: [String: Int] = [:]
        for (index, user) in records.enumerated() { latest[user.id] = index }
        var users = records.indices.filter { latest[records[$0].id] == $0 }.map { records[$0] }
        let ids = users.map(\.id)
        let ours = try await PostgresPreferences.viewsAreDigests(connection)
        if !ours, let first = users.first(where: { said[$0.id]?.preferences != nil }) {
            throw PostgresStoreError(
                "the line of user \(first.id) has preferences, but digest_users or digest_reader_preferences is your own view: preferences come from your tables (docs/005-postgresql.md, \"Reader preferences\"); leave `preferences` out of users.jsonl",
                kind: .configuration)
        }
        try await PostgresPreferences.lockUsers(ids, on: connection)
        let stored = try await PostgresPreferences.stored(ids, on: connection)
        let week = ISOWeek(utcInstant: at)
        var changes: [PostgresPreferences.Change] = []
        for index in users.indices {
            let id = users[index].id
            let line = said[id] ?? (nil, nil)
            let before = stored[id] ?? StoredPreferences(preferences: ReaderPreferences(), version: 0)
            var after = line.preferences?.resolvingFrom(stored: before.preferences, currentWeek: week) ?? before.preferences
            after.off = line.off ?? before.preferences.off
            // Only a press changes "fewer": an import keeps what is stored.
            after.fewer = before.preferences.fewer
            users[index].preferences = after
            if ours && after != before.preferences { changes.append(.init(id: id, before: before, after: after)) }
        }
        // One device, one reader, within the batch: a token listed under several readers goes to the
        // later registration (both dates known), else to the later line.
        var holder: [String: (user: Int, registeredAt: Int64?)] = [:]
        for (index, user) in users.enumerated() {
            for device in user.devices {
                if let current = holder[device.token], current.user != index, let theirs = current.registeredAt,
                    let mine = device.registeredAt, theirs > mine
                {
                    continue
                }
                holder[device.token] = (index, device.registeredAt)
            }
        }
        // 0 stands for an unknown registration, '' for no topic and no keys. A device's place in the list (`list_position`) orders the
        // undated ones when the reader has more devices than a run sends to (`DeviceSelection`).
        var owners: [String] = [], tokens: [String] = [], platforms: [String] = [], registered: [Int64] = [], positions: [Int64] = []
        var providers: [String] = [], topics: [String] = [], p256dhs: [String] = [], auths: [String] = []
        for (index, user) in users.enumerated() {
            var seen = Set<String>()
            for (position, device) in user.devices.enumerated().reversed()
            where holder[device.token]?.user == index && seen.insert(device.token).inserted {
                owners.append(user.id)
                tokens.append(device.token)
                platforms.append(device.platform.rawValue)
                registered.append(device.registeredAt ?? 0)
                positions.append(Int64(position))
                providers.append(device.provider.rawValue)
                topics.append(device.topic ?? "")
                p256dhs.append(device.subscriptionKeys?.p256dh ?? "")
                auths.append(device.subscriptionKeys?.auth ?? "")
            }
        }
        // Across the store: the batch takes a token from another reader unless they registered it later.
        try await connection.run(
            """
            DELETE FROM digest_import_devices d
            USING unnest(\(owners)::text[], \(tokens)::text[], \(registered)::int8[]) AS l(user_id, token, r)
            WHERE d.token = l.token AND d.user_id <> l.user_id
              AND NOT (d.registered_at IS NOT NULL AND l.r <> 0 AND d.registered_at > to_timestamp(l.r))
            """)
        let rows = try await connection.rows(
            """
            WITH upserted AS (
                INSERT INTO digest_import_users (id, locale, time_zone, opted_out)
                SELECT * FROM unnest(\(users.map(\.id))::text[], \(users.map(\.locale))::text[],
                                     \(users.map(\.timeZone))::text[], \(users.map(\.optedOut))::bool[])
                ON CONFLICT (id) DO UPDATE SET locale = excluded.locale, time_zone = excluded.time_zone, opted_out = excluded.opted_out,
                    seq = CASE WHEN digest_import_users.time_zone IS DISTINCT FROM excluded.time_zone
                                    OR (digest_import_users.opted_out AND NOT excluded.opted_out)
                               THEN nextval('digest_user_seq') ELSE digest_import_users.seq END
                WHERE (digest_import_users.locale, digest_import_users.time_zone, digest_import_users.opted_out)
                    IS DISTINCT FROM (excluded.locale, excluded.time_zone, excluded.opted_out)
                RETURNING id, xmax = 0 AS inserted),
            listed AS (
                SELECT user_id, token, platform, to_timestamp(nullif(r, 0)) AS registered_at, list_position, provider,
                    nullif(topic, '') AS topic, nullif(p256dh, '') AS keys_p256dh, nullif(auth, '') AS keys_auth
                FROM unnest(\(owners)::text[], \(tokens)::text[], \(platforms)::text[], \(registered)::int8[], \(positions)::int4[],
                            \(providers)::text[], \(topics)::text[], \(p256dhs)::text[], \(auths)::text[])
                    AS t(user_id, token, platform, r, list_position, provider, topic, p256dh, auth)
                WHERE NOT EXISTS (SELECT 1 FROM digest_import_devices d
                                  WHERE d.token = t.token AND d.user_id <> t.user_id AND d.registered_at > to_timestamp(nullif(t.r, 0)))),
            reregistered AS (
                -- A later registration of a device the reader has counts as a new device (a token FCM
                -- called dead may be alive again); this sees the rows as they were before the statement.
                SELECT l.user_id FROM listed l JOIN digest_import_devices d ON d.user_id = l.user_id AND d.token = l.token
                WHERE l.registered_at IS NOT NULL AND (d.registered_at IS NULL OR d.registered_at < l.registered_at)),
            removed AS (
                DELETE FROM digest_import_devices d
                WHERE d.user_id = ANY(\(users.map(\.id))::text[])
                  AND NOT EXISTS (SELECT 1 FROM listed l WHERE l.user_id = d.user_id AND l.token = d.token)
                RETURNING d.user_id),
            added AS (
                INSERT INTO digest_import_devices (user_id, token, platform, registered_at, list_position, provider, topic, keys_p256dh, keys_auth)
                SELECT user_id, token, platform, registered_at, list_position, provider, topic, keys_p256dh, keys_auth FROM listed
                ON CONFLICT (user_id, token) DO UPDATE SET platform = excluded.platform, registered_at = excluded.registered_at,
                    list_position = excluded.list_position, provider = excluded.provider, topic = excluded.topic,
                    keys_p256dh = excluded.keys_p256dh, keys_auth = excluded.keys_auth
                WHERE (digest_import_devices.platform, digest_import_devices.registered_at, digest_import_devices.list_position,
                       digest_import_devices.provider, digest_import_devices.topic, digest_import_devices.keys_p256dh,
                       digest_import_devices.keys_auth)
                    IS DISTINCT FROM (excluded.platform, excluded.registered_at, excluded.list_position, excluded.provider, excluded.topic,
                                      excluded.keys_p256dh, excluded.keys_auth)
                RETURNING user_id, xmax = 0 AS fresh)
            SELECT (SELECT coalesce(array_agg(id), '{}')
                    FROM (SELECT id FROM upserted UNION SELECT user_id FROM removed UNION SELECT user_id FROM added) changed),
                   coalesce((SELECT array_agg(DISTINCT g.user_id)
                             FROM (SELECT user_id FROM added WHERE fresh UNION SELECT user_id FROM reregistered) g
                             WHERE NOT EXISTS (SELECT 1 FROM upserted x WHERE x.id = g.user_id AND x.inserted)), '{}')
            """)
        let (changedIDs, gained) = try rows.first?.decode(([String], [String]).self) ?? ([], [])
        try await PostgresPreferences.store(changes, source: .import, messageID: nil, at: at, on: connection)
        let changed = Set(changedIDs).union(changes.map(\.id)).count
        if !gained.isEmpty {
            // A known user with a new device takes a new `seq`, so the rolling runs of a week already
            // under way find the device (a separate statement: one statement cannot update a row twice).
            try await connection.run(
                "UPDATE digest_import_users SET seq = nextval('digest_user_seq') WHERE id = ANY(\(gained)::text[])")
        }
        return ImportBatchResult(written: changed, unchanged: records.count - changed)
    }

    /// One upsert per article, in batch order (so a later record of the same id wins); an article
    /// counts as written when the upsert changed it.
    static func write(articles: [Article], on connection: PostgresConnection) async throws -> ImportBatchResult {
        var result = ImportBatchResult()
        for article in articles {
            let changed = try await connection.changed(
                """
                INSERT INTO digest_import_articles (id, title, url, image_url, topics, published_at, reading_minutes, language)
                VALUES (\(article.id), \(article.title), \(article.url), \(article.imageURL), \(article.topics)::text[],
                        to_timestamp(\(article.publishedAt)), \(article.readingMinutes), \(article.language))
                ON CONFLICT (id) DO UPDATE SET title = excluded.title, url = excluded.url, image_url = excluded.image_url,
                    topics = excluded.topics, published_at = excluded.published_at, reading_minutes = excluded.reading_minutes,
                    language = excluded.language
                WHERE (digest_import_articles.title, digest_import_articles.url, digest_import_articles.image_url,
                       digest_import_articles.topics, digest_import_articles.published_at, digest_import_articles.reading_minutes,
                       digest_import_articles.language)
                    IS DISTINCT FROM (excluded.title, excluded.url, excluded.image_url, excluded.topics, excluded.published_at,
                       excluded.reading_minutes, excluded.language)
                RETURNING 1
                """)
            if changed > 0 { result.written += 1 } else { result.unchanged += 1 }
        }
        return result
    }

    /// One statement for the batch's reads: existence checks, the insert, and each read's outcome
    /// (the first of identical reads counts as written, the rest as unchanged; reads of unknown
    /// users or articles are rejected, a user's absence named first).
    static func write(reads: [ImportedRead], on connection: PostgresConnection) async throws -> ImportBatchResult {
        let rows = try await connection.rows(
            """
            WITH input AS (
                SELECT * FROM unnest(\(reads.indices.map { $0 })::int8[], \(reads.map(\.userID))::text[],
                                     \(reads.map(\.articleID))::text[], \(reads.map(\.readAt))::int8[],
                                     \(reads.map(\.seconds))::int8[]) AS t(i, u, a, at, s)),
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
        var result = ImportBatchResult()
        for row in rows {
            let (index, knownUser, knownArticle, inserted) = try row.decode((Int, Bool, Bool, Bool).self)
            if !knownUser {
                result.rejected.append(.init(index: index, reason: .unknownUser))
            } else if !knownArticle {
                result.rejected.append(.init(index: index, reason: .unknownArticle))
            } else if inserted {
                result.written += 1
            } else {
                result.unchanged += 1
            }
        }
        return result
    }
}
