public import DigestCore
public import DigestStore
import PostgresNIO

/// ``HistoryReader`` over the views `digest_users`, `digest_devices`, `digest_articles` and
/// `digest_reads`; its batches are chunks claimed from the week's shared run, whose leases the run
/// coordination renews on a connection of its own while this reader's queries run.
public actor PostgresHistoryReader: HistoryReader {
    let pool: PostgresPool
    let coordination: PostgresRunCoordination
    /// Topics by article id: the run's candidate articles, then any older article a read names,
    /// fetched once; bounded like SQLite's.
    private var topics: [String: (topics: [String], language: String?)] = [:]
    private let topicsLimit = 500_000
    /// Whether `digest_articles` has a `language` column (an adopter's view may not): asked once.
    private var articlesHaveLanguage: Bool?
    /// Whether `digest_devices` has a `registered_at` column (an adopter's view may not): asked once.
    private var devicesHaveRegistration: Bool?
    /// Whether `digest_devices` has a `list_position` column (an adopter's view may not): asked once.
    private var devicesHaveListPosition: Bool?
    /// Whether `digest_devices` has `provider` and `topic` columns (an adopter's view may not): asked once.
    private var devicesHaveProvider: Bool?
    private var devicesHaveTopic: Bool?
    /// Whether `digest_devices` has `keys_p256dh` and `keys_auth` columns (an adopter's view may not):
    /// asked once.
    private var devicesHaveKeys: Bool?
    /// The candidate articles of the last ``earlierReads(of:among:before:)`` and their bind, encoded
    /// once: a run asks with the same list (some 20,000 ids) for every chunk.
    private var candidatesBind: (ids: [String], bind: PostgresEncodedTextArray)?
    /// Rolling runs: batches are a zone's users, whose ids are not consecutive, so their reads,
    /// earlier reads and picks are asked by the list of ids instead of by the range first…last.
    var byList = false

    init(pool: PostgresPool, coordination: PostgresRunCoordination) {
        self.pool = pool
        self.coordination = coordination
    }

    /// Claims the next chunk of the week (a ready one, or one whose lease ended) and reads its users.
    /// When every other chunk is held by live workers, waits for them to finish or for a lease to end,
    /// so that a process returns `nil` only once every chunk is done.
    public func nextBatch(week: ISOWeek, after cursor: Int64, limit: Int) async throws -> UserBatch? {
        guard let chunk = try await claimChunk(of: week, zones: nil) else { return nil }
        let users = try await self.users(after: chunk.afterUser, through: chunk.throughUser)
        return UserBatch(users: users, position: Int64(chunk.number))
    }

    /// A chunk this process claimed: an id range (`--week` runs) or a zone's `seq` range (rolling runs).
    struct ClaimedChunk {
        var number: Int
        var afterUser: String?, throughUser: String?
        var zone: String?, afterSeq: Int64?, throughSeq: Int64?
    }

    /// Claims the next chunk of `week` (a ready one, or one whose lease ended): an id-range chunk, or
    /// with `zones` a zone chunk of one of them. While every other open chunk of the kind is held by
    /// live workers, waits for them to finish or for a lease to end, so that `nil` means every such
    /// chunk is done.
    func claimChunk(of week: ISOWeek, zones: [String]?) async throws -> ClaimedChunk? {
        var binds = PostgresBindings()
        binds.append(week.description)
        binds.append(coordination.settings.worker)
        binds.append(coordination.leaseSeconds)
        let kind: String
        if let zones {
            binds.append(zones)
            kind = "time_zone = ANY($4::text[])"
        } else {
            kind = "time_zone IS NULL"
        }
        while true {
            let claimed = try await pool.rows(
                PostgresQuery(
                    unsafeSQL: """
                        UPDATE digest_run_chunks c
                        SET state = 'claimed', lease_owner = $2, claims = c.claims + 1, leased_until = now() + make_interval(secs => $3)
                        WHERE (c.week, c.chunk) = (
                            SELECT week, chunk FROM digest_run_chunks
                            WHERE week = $1 AND \(kind) AND state <> 'done' AND (state = 'ready' OR leased_until <= now())
                            ORDER BY chunk LIMIT 1 FOR UPDATE SKIP LOCKED)
                        RETURNING c.chunk, c.after_user, c.through_user, c.time_zone, c.after_seq, c.through_seq
                        """,
                    binds: binds))
            if let row = claimed.first {
                let (number, afterUser, throughUser, zone, afterSeq, throughSeq) =
                    try row.decode((Int, String?, String?, String?, Int64?, Int64?).self)
                coordination.holding(number, week: week.description)
                return ClaimedChunk(
                    number: number, afterUser: afterUser, throughUser: throughUser, zone: zone, afterSeq: afterSeq, throughSeq: throughSeq)
            }
            // Nothing to claim: done, or others hold the rest (wait for them or for their leases).
            var openBinds = PostgresBindings()
            openBinds.append(week.description)
            if let zones { openBinds.append(zones) }
            let open = try await pool.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT count(*), coalesce(extract(epoch FROM min(leased_until) - now()), 0)::float8
                        FROM digest_run_chunks WHERE week = $1 AND \(zones == nil ? kind : "time_zone = ANY($2::text[])") AND state <> 'done'
                        """,
                    binds: openBinds))
            let (left, soonest) = try open.first?.decode((Int, Double).self) ?? (0, 0)
            guard left > 0 else { return nil }
            try await Task.sleep(for: .seconds(min(1.0, max(0.05, soonest))))
        }
    }

    private func users(after: String?, through: String?) async throws -> [StoredReader] {
        let range = Self.range("u.id", after: after, through: through)
        // The same binds, on the view's key.
        let preferences = Self.range("p.id", after: after, through: through).sql
        let query = PostgresQuery(
            unsafeSQL: "SELECT \(Self.userColumns(PostgresPreferences.join(range: preferences))) WHERE \(range.sql) ORDER BY u.id COLLATE \"C\"",
            binds: range.binds)
        return try await withDevices(try await pool.rows(query))
    }

    /// What a users query selects, with its `FROM`: a reader's columns of `digest_users u` and their
    /// preferences from `digest_reader_preferences` by `join` (NULL for the readers without a row, who
    /// cost the query a look in the view's key and the decoder five NULLs).
    static func userColumns(_ join: String = PostgresPreferences.join) -> String {
        "u.id, u.locale, u.time_zone, u.opted_out, \(PostgresPreferences.columns) FROM digest_users u \(join)"
    }

    /// Users from rows of ``userColumns`` (id, locale, time zone, opted out, preferences) in id byte order, keyed by position,
    /// with their devices (one query: by the range of their ids, or by their list under ``byList``),
    /// each user's rows in ``DeviceSelection`` order. A device whose token FCM called unregistered,
    /// and that was not registered again since, is counted in ``Reader/deadTokens``; the live ones
    /// are admitted in that order (``Reader/admit(_:)``): the first ``DeviceSelection/limit`` are the
    /// reader's devices, the rest counted. A row of an unknown platform or provider is no device: it takes no
    /// place and counts as nothing. (Ranking in the query instead, with window functions, cost the
    /// server four times this query's time for every user, to spare rows only for the rare reader
    /// with more than 20 devices.)
    func withDevices(_ rows: [PostgresRow]) async throws -> [StoredReader] {
        var users: [StoredReader] = []
        users.reserveCapacity(rows.count)
        for row in rows {
            let (id, locale, zone, optedOut, every, from, paused, follow, mute, fewer) =
                try row.decode((String, String, String, Bool, Int?, String?, Int?, String?, String?, String?).self)
            // A reader the preferences view has twice comes twice from a chunk's join: once is the reader.
            if users.last?.reader.id == id { continue }
            var reader = Reader(id: id, locale: locale, timeZone: zone, optedOut: optedOut, devices: [])
            reader.preferences = PostgresPreferences.preferences(off: optedOut, (every, from, paused, follow, mute, fewer))
            users.append(StoredReader(key: Int64(users.count + 1), reader: reader))
        }
        guard !users.isEmpty else { return [] }
        var binds = PostgresBindings()
        let condition = usersCondition(users, &binds, column: "d.user_id")
        let (registered, listPosition, provider, topic, keys) = try await deviceOrderColumns()
        let order = DeviceSelection.orderSQL(registeredAt: registered, listPosition: listPosition, token: "d.token COLLATE \"C\"")
        let devices = PostgresQuery(
            unsafeSQL: """
                SELECT d.user_id, d.token, d.platform, extract(epoch FROM \(registered))::int8,
                       EXISTS (SELECT 1 FROM digest_dead_tokens x
                               WHERE x.token = d.token AND (\(registered) IS NULL OR \(registered) <= x.died_at)),
                       coalesce(\(provider), 'fcm'), \(topic), \(keys)
                FROM digest_devices d
                WHERE \(condition)
                ORDER BY d.user_id COLLATE "C", \(order)
                """,
            binds: binds)
        var index = 0
        for row in try await pool.rows(devices) {
            let (owner, token, platformName, registeredAt, dead, providerName, topic, p256dh, auth) =
                try row.decode((String, String, String, Int64?, Bool, String, String?, String?, String?).self)
            while index < users.count && users[index].reader.id.utf8.lexicographicallyPrecedes(owner.utf8) { index += 1 }
            guard index < users.count, users[index].reader.id == owner, let platform = Platform(rawValue: platformName),
                let provider = Provider(rawValue: providerName)
            else { continue }
            if dead {
                users[index].reader.deadTokens += 1
            } else {
                var keys: Device.SubscriptionKeys?
                if let p256dh, let auth { keys = .init(p256dh: p256dh, auth: auth) }
                users[index].reader.admit(
                    Device(token: token, platform: platform, registeredAt: registeredAt, topic: topic, provider: provider, subscriptionKeys: keys))
            }
        }
        return users
    }

    /// `d.registered_at`, `d.list_position`, `d.provider`, `d.topic` and the subscription keys
    /// (`d.keys_p256dh, d.keys_auth`), each `NULL` (of its type) when the `digest_devices` view has no
    /// such column (an adopter's view from before it was part of the contract): read as never
    /// registered again, as listed in byte order of token, as FCM, as no topic and as no keys.
    private func deviceOrderColumns() async throws -> (
        registered: String, listPosition: String, provider: String, topic: String, keys: String
    ) {
        if devicesHaveRegistration == nil {
            devicesHaveRegistration = try await pool.relation("digest_devices", hasColumn: "registered_at")
        }
        if devicesHaveListPosition == nil {
            devicesHaveListPosition = try await pool.relation("digest_devices", hasColumn: "list_position")
        }
        if devicesHaveProvider == nil {
            devicesHaveProvider = try await pool.relation("digest_devices", hasColumn: "provider")
        }
        if devicesHaveTopic == nil {
            devicesHaveTopic = try await pool.relation("digest_devices", hasColumn: "topic")
        }
        if devicesHaveKeys == nil {
            var both = try await pool.relation("digest_devices", hasColumn: "keys_p256dh")
            if both { both = try await pool.relation("digest_devices", hasColumn: "keys_auth") }
            devicesHaveKeys = both
        }
        return (
            devicesHaveRegistration == true ? "d.registered_at" : "NULL::timestamptz",
            devicesHaveListPosition == true ? "d.list_position" : "NULL::int8",
            devicesHaveProvider == true ? "d.provider::text" : "NULL::text",
            devicesHaveTopic == true ? "d.topic::text" : "NULL::text",
            devicesHaveKeys == true ? "d.keys_p256dh::text, d.keys_auth::text" : "NULL::text, NULL::text"
        )
    }

    /// A condition on `column` for `(after, through]` in byte order, with its binds.
    static func range(_ column: String, after: String?, through: String?) -> (sql: String, binds: PostgresBindings) {
        var binds = PostgresBindings()
        var conditions: [String] = []
        if let after {
            binds.append(after)
            conditions.append("\(column) COLLATE \"C\" > $\(binds.count)")
        }
        if let through {
            binds.append(through)
            conditions.append("\(column) COLLATE \"C\" <= $\(binds.count)")
        }
        return (conditions.isEmpty ? "true" : conditions.joined(separator: " AND "), binds)
    }

    /// The chunk's reads in one query (its users are consecutive ids), split per user; the topics
    /// come from this reader's cache (one more query for the articles it has not seen yet), not from
    /// a join per chunk.
    public func reads(of users: [StoredReader], since: [Int64]) async throws -> [[ReadEvent]] {
        guard !users.isEmpty, let earliest = since.min(), earliest != Int64.max else { return users.map { _ in [] } }
        // One row per user with their reads as arrays: rows, more than values, cost to move and decode.
        // The arrays follow the sorted subquery (the digest does not depend on the order of reads).
        var binds = PostgresBindings()
        let condition = usersCondition(users, &binds)
        binds.append(earliest)
        let rows = try await pool.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT user_id, array_agg(read_at), array_agg(article_id), array_agg(seconds::bigint)
                    FROM (SELECT user_id, read_at, article_id, seconds FROM digest_reads
                          WHERE \(condition) AND read_at >= to_timestamp($\(binds.count))
                          ORDER BY user_id COLLATE "C", read_at, article_id) r
                    GROUP BY user_id ORDER BY user_id COLLATE "C"
                    """,
                binds: binds))
        var result: [[ReadEvent]] = Array(repeating: [], count: users.count)
        var missing = Set<String>()
        var index = 0
        for row in rows {
            // The arrays as they came (`read_at` as the server keeps it, no conversion to a numeric
            // epoch there), split here.
            let (owner, timesBytes, articlesBytes, secondsBytes) = try row.decode((String, ByteBuffer, ByteBuffer, ByteBuffer).self)
            while index < users.count && users[index].reader.id.utf8.lexicographicallyPrecedes(owner.utf8) { index += 1 }
            guard index < users.count, users[index].reader.id == owner else { continue }
            var reads: [ReadEvent] = []
            do {
                var times = try PostgresArrayReader(timesBytes), articles = try PostgresArrayReader(articlesBytes)
                var seconds = try PostgresArrayReader(secondsBytes)
                guard times.count == articles.count, times.count == seconds.count else {
                    throw PostgresStoreError(
                        "\(pool.location): the reads of user \(owner) came as arrays of different lengths (\(times.count) times, \(articles.count) articles, \(seconds.count) durations)")
                }
                reads.reserveCapacity(times.count)
                for _ in 0..<times.count {
                    let readAt = try times.nextUnixSeconds(), article = try articles.nextString(), duration = try seconds.nextInt64()
                    guard readAt >= since[index] else { continue }
                    let known = topics[article]
                    if known == nil { missing.insert(article) }
                    reads.append(
                        ReadEvent(
                            articleID: article, topics: known?.topics ?? [], readAt: readAt, seconds: Int(duration),
                            language: known?.language))
                }
            } catch is PostgresArrayReader.Malformed {
                throw PostgresStoreError(
                    "\(pool.location): the reads of user \(owner) came as arrays digest cannot read: digest_reads needs read_at timestamptz (or timestamp), article_id text and seconds integer")
            }
            result[index] = reads
        }
        if !missing.isEmpty {
            if topics.count + missing.count > topicsLimit { topics.removeAll(keepingCapacity: true) }
            let language = try await languageColumn()
            var binds = PostgresBindings()
            binds.append(Array(missing))
            for row in try await pool.rows(
                PostgresQuery(
                    unsafeSQL: "SELECT id, topics, \(language) FROM digest_articles WHERE id = ANY($1)",
                    binds: binds))
            {
                let (id, articleTopics, articleLanguage) = try row.decode((String, [String], String?).self)
                topics[id] = (articleTopics, articleLanguage)
            }
            // A read of an article the views do not have counts, with no topics.
            for id in missing where topics[id] == nil { topics[id] = ([], nil) }
            for user in result.indices {
                for read in result[user].indices where missing.contains(result[user][read].articleID) {
                    let known = topics[result[user][read].articleID]
                    result[user][read].topics = known?.topics ?? []
                    result[user][read].language = known?.language
                }
            }
        }
        return result
    }

    public func articles(publishedFrom from: Int64, until: Int64) async throws -> [Article] {
        var binds = PostgresBindings()
        binds.append(from)
        binds.append(until)
        let rows = try await pool.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT id, title, url, image_url, topics, extract(epoch FROM published_at)::bigint, reading_minutes,
                           \(try await languageColumn())
                    FROM digest_articles WHERE published_at >= to_timestamp($1) AND published_at < to_timestamp($2)
                    ORDER BY published_at DESC, id
                    """,
                binds: binds))
        var articles: [Article] = []
        articles.reserveCapacity(rows.count)
        for row in rows {
            let (id, title, url, image, topics, published, minutes, language) =
                try row.decode((String, String, String, String?, [String], Int64, Int, String?).self)
            if self.topics.count < topicsLimit { self.topics[id] = (topics, language) }
            articles.append(
                Article(
                    id: id, title: title, url: url, imageURL: image, topics: topics, publishedAt: published,
                    readingMinutes: minutes, language: language))
        }
        return articles
    }

    /// `language`, or `NULL::text` when the `digest_articles` view has no such column (an adopter's
    /// view from before it was part of the contract): read as no language.
    private func languageColumn() async throws -> String {
        if articlesHaveLanguage == nil {
            articlesHaveLanguage = try await pool.relation("digest_articles", hasColumn: "language")
        }
        return articlesHaveLanguage == true ? "language" : "NULL::text"
    }

    /// The reads of `articles` by the chunk's users before `before`, in one query: the users' reads
    /// by the reads key (as ``reads(of:since:)`` finds them), each kept when its article is among
    /// `articles`, which the server hashes once per call. The test sits inside `coalesce` so that the
    /// planner estimates it as one opaque condition: a bare `article_id = ANY($1)` had it estimate
    /// each of the ~20,000 candidates at every call (16–42 ms a chunk, more than the query ran). (An
    /// `IN (SELECT unnest($1))` subquery plans as fast but costs several times more to run: its hash
    /// table is built of tuples, where `= ANY` of a constant array hashes the values.)
    public func earlierReads(of users: [StoredReader], among articles: [String], before: Int64) async throws -> [[String]] {
        guard !users.isEmpty, !articles.isEmpty else { return users.map { _ in [] } }
        // The same array (one buffer) for every chunk of a run: compared by identity first, so
        // this costs nothing then.
        if candidatesBind?.ids != articles { candidatesBind = (articles, PostgresEncodedTextArray(articles)) }
        var binds = PostgresBindings()
        binds.append(candidatesBind!.bind)
        let condition = usersCondition(users, &binds)
        binds.append(before)
        return try await idsByUser(
            users,
            PostgresQuery(
                unsafeSQL: """
                    SELECT user_id, array_agg(article_id) FROM digest_reads
                    WHERE \(condition) AND read_at < to_timestamp($\(binds.count)) AND coalesce(article_id = ANY($1), false)
                    GROUP BY user_id
                    """,
                binds: binds))
    }

    /// The picks the ledger kept per user and week (`digest_picks`), for the chunk's range of users.
    public func recentPicks(of users: [StoredReader], weeks: [ISOWeek]) async throws -> [[String]] {
        guard !users.isEmpty, !weeks.isEmpty else { return users.map { _ in [] } }
        var binds = PostgresBindings()
        let condition = usersCondition(users, &binds)
        binds.append(weeks.map(\.description))
        return try await idsByUser(
            users,
            PostgresQuery(
                unsafeSQL: "SELECT user_id, picks FROM digest_picks WHERE \(condition) AND week = ANY($\(binds.count))",
                binds: binds))
    }

    /// `user_id` among `users` as SQL whose values are appended to `binds`: the range first…last of
    /// a chunk of consecutive ids, or the list of ids of a rolling run's batch (``byList``).
    func usersCondition(_ users: [StoredReader], _ binds: inout PostgresBindings, column: String = "user_id") -> String {
        if byList {
            binds.append(users.map(\.reader.id))
            return "\(column) COLLATE \"C\" = ANY($\(binds.count)::text[])"
        }
        binds.append(users.first?.reader.id ?? "")
        binds.append(users.last?.reader.id ?? "")
        return "\(column) COLLATE \"C\" >= $\(binds.count - 1) AND \(column) COLLATE \"C\" <= $\(binds.count)"
    }

    /// For each of `users`, the ids of the rows `query` returns for them (rows of a user id and an
    /// array of ids; a user may have several rows).
    private func idsByUser(_ users: [StoredReader], _ query: PostgresQuery) async throws -> [[String]] {
        var position: [String: Int] = [:]
        position.reserveCapacity(users.count)
        for (index, user) in users.enumerated() { position[user.reader.id] = index }
        var result = [[String]](repeating: [], count: users.count)
        for row in try await pool.rows(query) {
            // The array as it came, split here rather than through postgres-nio's generic decoding.
            let (user, bytes) = try row.decode((String, ByteBuffer).self)
            guard let index = position[user] else { continue }
            do {
                var ids = try PostgresArrayReader(bytes)
                result[index].reserveCapacity(result[index].count + ids.count)
                for _ in 0..<ids.count { result[index].append(try ids.nextString()) }
            } catch {
                throw PostgresStoreError("\(pool.location): the ids of user \(user) came as an array digest cannot read")
            }
        }
        return result
    }

    /// Users in the week's chunks that are not done yet (all users before the week is split).
    public func countUsers(week: ISOWeek, after key: Int64) async throws -> Int {
        let total = try await pool.rows("SELECT count(*) FROM digest_users").first?.decode(Int.self) ?? 0
        let done = try await pool.rows(
            """
            SELECT coalesce(sum((counters->>'users')::bigint), 0)::bigint FROM digest_run_chunks
            WHERE week = \(week.description) AND time_zone IS NULL AND state = 'done'
            """
        ).first?.decode(Int.self) ?? 0
        return max(0, total - done)
    }

    public func hasReads(from: Int64, until: Int64) async throws -> Bool {
        try await !pool.rows(
            "SELECT 1 FROM digest_reads WHERE read_at >= to_timestamp(\(from)) AND read_at < to_timestamp(\(until)) LIMIT 1"
        ).isEmpty
    }

    public func user(id: String) async throws -> StoredReader? {
        try await users(matching: "u.id = $1", id, limit: 1).first
    }

    public func users(idPrefix prefix: String, limit: Int) async throws -> [StoredReader] {
        try await users(matching: "starts_with(u.id, $1)", prefix, limit: limit)
    }

    public func users(afterID id: String, limit: Int) async throws -> [StoredReader] {
        // By bytes, as the ORDER BY sorts, so that pages neither skip nor repeat a user.
        try await users(matching: "u.id COLLATE \"C\" > $1", id, limit: limit)
    }

    private func users(matching condition: String, _ value: String, limit: Int) async throws -> [StoredReader] {
        var binds = PostgresBindings()
        binds.append(value)
        binds.append(limit)
        let rows = try await pool.rows(
            PostgresQuery(
                unsafeSQL: "SELECT \(Self.userColumns()) WHERE \(condition) ORDER BY u.id COLLATE \"C\" LIMIT $2",
                binds: binds))
        return try await withDevices(rows)
    }
}
