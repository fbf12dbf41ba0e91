import DigestCore
public import DigestStore
import PostgresNIO

extension PostgresDatabase {
    /// Deletes settled messages and old picks in batches, each one statement and so one short
    /// transaction: a batch locks only its own rows (`FOR UPDATE SKIP LOCKED`, so a row a requeue is
    /// changing is left for the next prune) and never the table; with `dryRun` only counts.
    public func prune(_ retention: OutboxRetention, now: Int64) async throws -> OutboxPruneResult {
        try await withPool { pool in
            let cutoff = retention.cutoff(now: now)
            let week = retention.firstKeptPicksWeek(now: now).description
            let limit = retention.batchSize
            if retention.dryRun {
                var result = OutboxPruneResult()
                for row in try await pool.rows(
                    "SELECT state, count(*)::int8 FROM digest_outbox WHERE \(unescaped: Self.settled) AND \(unescaped: Self.settleTime) < to_timestamp(\(cutoff)) GROUP BY state"
                ) {
                    let (state, count) = try row.decode((String, Int).self)
                    result.messages[state] = count
                }
                result.picks = try await pool.rows("SELECT count(*)::int8 FROM digest_picks WHERE week < \(week)").first?.decode(Int.self) ?? 0
                return result
            }
            var result = OutboxPruneResult()
            while true {
                var deleted = 0
                for row in try await pool.rows(
                    """
                    WITH batch AS (
                        SELECT id FROM digest_outbox
                        WHERE \(unescaped: Self.settled) AND \(unescaped: Self.settleTime) < to_timestamp(\(cutoff))
                        ORDER BY \(unescaped: Self.settleTime) LIMIT \(limit)
                        FOR UPDATE SKIP LOCKED),
                    gone AS (
                        DELETE FROM digest_outbox WHERE id = ANY(ARRAY(SELECT id FROM batch))
                        RETURNING state, week, variant, platform, coalesce(locale, '') AS locale, coalesce(report->>'arm', '') AS arm),
                    -- The week's report still counts the sent ones (docs/009).
                    kept AS (
                        INSERT INTO digest_pruned_sent (week, variant, platform, locale, arm, sent)
                        SELECT week, variant, platform, locale, arm, count(*) FROM gone WHERE state = 'sent'
                        GROUP BY week, variant, platform, locale, arm
                        ON CONFLICT (week, variant, platform, locale, arm) DO UPDATE SET sent = digest_pruned_sent.sent + excluded.sent)
                    SELECT state, count(*)::int8 FROM gone GROUP BY state
                    """)
                {
                    let (state, count) = try row.decode((String, Int).self)
                    result.messages[state, default: 0] += count
                    deleted += count
                }
                if deleted < limit { break }
            }
            // Along the primary key from the last batch's last key, so no batch scans what an earlier
            // one passed: the batch's last key found, then the key range up to it deleted.
            var after = (user: "", week: "")
            while true {
                guard
                    let row = try await pool.rows(
                        """
                        WITH last AS (
                            SELECT user_id, week FROM (
                                SELECT user_id, week FROM digest_picks
                                WHERE (user_id, week) > (\(after.user), \(after.week)) AND week < \(week)
                                ORDER BY user_id, week LIMIT \(limit)) batch
                            ORDER BY user_id DESC, week DESC LIMIT 1),
                        gone AS (
                            DELETE FROM digest_picks p USING last
                            WHERE (p.user_id, p.week) > (\(after.user), \(after.week)) AND (p.user_id, p.week) <= (last.user_id, last.week)
                              AND p.week < \(week)
                            RETURNING 1)
                        SELECT (SELECT count(*) FROM gone)::int8, (SELECT user_id FROM last), (SELECT week FROM last)
                        """
                    ).first
                else { break }
                let (count, user, last) = try row.decode((Int, String?, String?).self)
                result.picks += count
                guard count == limit, let user, let last else { break }
                after = (user, last)
            }
            return result
        }
    }

    public func liveImageURLs(now: Int64) async throws -> Set<String> {
        try await withPool { pool in
            var urls = Set<String>()
            for row in try await pool.rows(
                """
                SELECT DISTINCT u.url FROM digest_outbox o
                CROSS JOIN LATERAL (VALUES
                    (o.message #>> '{message,android,data,imageUrl}'), (o.message #>> '{message,android,data,iconUrl}'),
                    (o.message #>> '{message,apns,payload,imageUrl}'), (o.message #>> '{message,apns,fcm_options,image}'),
                    (o.message #>> '{message,webpush,notification,image}'), (o.message #>> '{message,webpush,notification,icon}'),
                    (o.message #>> '{imageUrl}'),  -- an APNs payload's, beside aps
                    (o.message #>> '{image}'), (o.message #>> '{icon}')  -- a Web Push plaintext's
                ) AS u(url)
                WHERE o.variant = 'Image' AND (o.state IN ('ready', 'leased') OR o.expires_at > to_timestamp(\(now)))
                  AND u.url IS NOT NULL
                """)
            {
                urls.insert(try row.decode(String.self))
            }
            return urls
        }
    }

    /// A settled message's settle time, word for word the expression of the index
    /// `digest_outbox_settled` (migration 7), so that the batches find the oldest by index.
    static let settleTime =
        "coalesce(settled_at, CASE state WHEN 'sent' THEN sent_at WHEN 'expired' THEN expires_at ELSE available_at END)"
    /// The index's condition, word for word.
    static let settled = "state IN ('sent', 'dead', 'expired')"
}
