import DigestCore
public import DigestStore

extension SQLiteDatabase {
    /// Deletes settled messages and old picks in batches, each its own `BEGIN IMMEDIATE` transaction
    /// (a run's or a sender's writes wait one batch at most), the write-ahead log restarted after each
    /// batch so that it holds one batch at most; with `dryRun` only counts.
    public func prune(_ retention: OutboxRetention, now: Int64) async throws -> OutboxPruneResult {
        let cutoff = retention.cutoff(now: now)
        let week = retention.firstKeptPicksWeek(now: now).description
        if retention.dryRun {
            return try await read { connection in
                let queries = SQLiteRetentionQueries(connection: connection)
                return OutboxPruneResult(messages: try queries.countMessages(before: cutoff), picks: try queries.countPicks(before: week))
            }
        }
        // One writer job a batch: the process's other writes (a sender's settlements) take turns with them.
        var result = OutboxPruneResult()
        while true {
            let gone = try await withConnection { connection in
                let gone = try connection.transaction { try SQLiteRetentionQueries(connection: connection).deleteMessages(before: cutoff, limit: retention.batchSize) }
                try? connection.restartWAL()
                return gone
            }
            result.messages.merge(gone) { $0 + $1 }
            if gone.values.reduce(0, +) < retention.batchSize { break }
        }
        var after = (user: "", week: "")
        while true {
            let start = after
            let (count, last) = try await withConnection { connection in
                let deleted = try connection.transaction {
                    try SQLiteRetentionQueries(connection: connection).deletePicks(before: week, after: start, limit: retention.batchSize)
                }
                try? connection.restartWAL()
                return (deleted.0, deleted.1.map { [$0.user, $0.week] })
            }
            result.picks += count
            guard let last, count == retention.batchSize else { break }
            after = (user: last[0], week: last[1])
        }
        // Departed tokens key messages only while a week that could still meet both readers is walked.
        try await withConnection { connection in
            let departures = try connection.statement(
                """
                DELETE FROM digest_departed_tokens WHERE left_at < ?1
                    AND left_at < coalesce((SELECT min(started_at) FROM digest_runs WHERE state = 'running'), ?1)
                """)
            departures.bind(cutoff, at: 1)
            try connection.transaction { try departures.run() }
        }
        return result
    }

    public func liveImageURLs(now: Int64) async throws -> Set<String> {
        try await read { connection in
            let statement = try connection.statement(SQLiteRetentionQueries.SQL.liveImageURLs)
            statement.bind(now, at: 1)
            var urls = Set<String>()
            while try statement.step() { urls.insert(statement.string(0)) }
            return urls
        }
    }
}

/// The statements of retention (`docs/001-outbox-semantics.md`, "Retention"), on one connection.
struct SQLiteRetentionQueries {
    let connection: SQLiteConnection

    /// Messages by state settled before `cutoff`.
    func countMessages(before cutoff: Int64) throws -> [String: Int] {
        let statement = try connection.statement(SQL.countMessages)
        statement.bind(cutoff, at: 1)
        var counts: [String: Int] = [:]
        while try statement.step() { counts[statement.string(0)] = statement.int(1) }
        return counts
    }

    /// Deletes up to `limit` of the messages settled before `cutoff`, the oldest first; returns them by
    /// state. The sent ones are added to `digest_pruned_sent` by week, variant, platform, locale and
    /// arm (in the caller's transaction), so the week's report still counts them.
    func deleteMessages(before cutoff: Int64, limit: Int) throws -> [String: Int] {
        let statement = try connection.statement(SQL.deleteMessages)
        statement.bind(cutoff, at: 1)
        statement.bind(limit, at: 2)
        var counts: [String: Int] = [:]
        var sent: [[String]: Int] = [:]
        while try statement.step() {
            let state = statement.string(0)
            counts[state, default: 0] += 1
            if state == "sent" {
                sent[(1...5).map { statement.isNull($0) ? "" : statement.string($0) }, default: 0] += 1
            }
        }
        if !sent.isEmpty {
            let add = try connection.statement(SQL.addPrunedSent)
            for (group, count) in sent {
                add.reset()
                for (offset, value) in group.enumerated() { add.bind(value, at: Int32(offset + 1)) }
                add.bind(count, at: 6)
                try add.run()
            }
        }
        return counts
    }

    func countPicks(before week: String) throws -> Int {
        let statement = try connection.statement(SQL.countPicks)
        statement.bind(week, at: 1)
        defer { statement.reset() }
        return try statement.step() ? statement.int(0) : 0
    }

    /// Deletes the next `limit` picks rows of weeks before `week` after the key `after`, in key order
    /// (a walk along the primary key, so no batch scans what an earlier one passed); returns how many
    /// and the last key.
    func deletePicks(before week: String, after: (user: String, week: String), limit: Int) throws -> (Int, (user: String, week: String)?) {
        let batch = try connection.statement(SQL.nextPicks)
        batch.bind(after.user, at: 1)
        batch.bind(after.week, at: 2)
        batch.bind(week, at: 3)
        batch.bind(limit, at: 4)
        var count = 0
        var last: (user: String, week: String)?
        while try batch.step() {
            count += 1
            last = (batch.string(0), batch.string(1))
        }
        guard let last else { return (0, nil) }
        let delete = try connection.statement(SQL.deletePicks)
        delete.bind(after.user, at: 1)
        delete.bind(after.week, at: 2)
        delete.bind(last.user, at: 3)
        delete.bind(last.week, at: 4)
        delete.bind(week, at: 5)
        try delete.run()
        return (count, last)
    }

    enum SQL {
        /// A settled message's settle time, word for word the expression of the index
        /// `digest_outbox_settled` (migration 6), so that the batches find the oldest by index.
        static let settleTime =
            "coalesce(settled_at, CASE state WHEN 'sent' THEN sent_at WHEN 'expired' THEN expires_at ELSE available_at END)"
        /// The index's condition, word for word.
        static let settled = "state IN ('sent', 'dead', 'expired')"

        static let countMessages = """
            SELECT state, count(*) FROM digest_outbox WHERE \(settled) AND \(settleTime) < ?1 GROUP BY state
            """
        static let deleteMessages = """
            DELETE FROM digest_outbox WHERE id IN (
                SELECT id FROM digest_outbox WHERE \(settled) AND \(settleTime) < ?1 ORDER BY \(settleTime) LIMIT ?2)
            RETURNING state, week, variant, platform, locale, json_extract(report, '$.arm')
            """
        static let addPrunedSent = """
            INSERT INTO digest_pruned_sent (week, variant, platform, locale, arm, sent) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (week, variant, platform, locale, arm) DO UPDATE SET sent = sent + excluded.sent
            """
        static let countPicks = "SELECT count(*) FROM digest_picks WHERE week < ?1"
        static let nextPicks = """
            SELECT user_id, week FROM digest_picks WHERE (user_id, week) > (?1, ?2) AND week < ?3 ORDER BY user_id, week LIMIT ?4
            """
        static let deletePicks = """
            DELETE FROM digest_picks WHERE (user_id, week) > (?1, ?2) AND (user_id, week) <= (?3, ?4) AND week < ?5
            """
        /// Every image URL of the Image messages within their TTL (the FCM encoder's keys on each
        /// platform; an APNs payload's `imageUrl`, beside `aps`; a Web Push plaintext's `image` and `icon`).
        static let liveImageURLs = """
            SELECT DISTINCT url FROM (
                SELECT json_extract(o.message, p.path) AS url
                FROM digest_outbox o CROSS JOIN (
                    SELECT '$.message.android.data.imageUrl' AS path
                    UNION ALL SELECT '$.message.android.data.iconUrl'
                    UNION ALL SELECT '$.message.apns.payload.imageUrl'
                    UNION ALL SELECT '$.message.apns.fcm_options.image'
                    UNION ALL SELECT '$.message.webpush.notification.image'
                    UNION ALL SELECT '$.message.webpush.notification.icon'
                    UNION ALL SELECT '$.imageUrl'
                    UNION ALL SELECT '$.image'
                    UNION ALL SELECT '$.icon') p
                WHERE o.variant = 'Image' AND (o.state IN ('ready', 'leased') OR o.expires_at > ?1))
            WHERE url IS NOT NULL
            """
    }
}
