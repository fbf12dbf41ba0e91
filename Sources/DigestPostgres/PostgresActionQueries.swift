public import DigestStore
import PostgresNIO

/// `digest report`'s button presses (docs/009, "The report"): each one statement over the week's rows.
extension PostgresDatabase: ActionViews {
    /// The week's sent messages (and what a prune deleted) and `fewer`/`pause`/`off` events (their
    /// timing from the outbox by the message id index) per variant, platform, arm and timing.
    package func actionCounts(week: String) async throws -> [ActionCounts] {
        try await withPool { pool in
            let rows = try await pool.rows(
                """
                SELECT '', variant, platform, coalesce(report->>'arm', ''), coalesce(timing, ''), count(*)::int8
                FROM digest_outbox WHERE week = \(week) AND state = 'sent' GROUP BY 2, 3, 4, 5
                UNION ALL
                SELECT '', variant, platform, arm, '', sent FROM digest_pruned_sent WHERE week = \(week)
                UNION ALL
                SELECT e.action, e.variant, e.platform, coalesce(e.arm, ''), coalesce(o.timing, ''), count(*)::int8
                FROM digest_events e LEFT JOIN digest_outbox o ON o.message_id = e.message_id
                WHERE e.week = \(week) AND e.type = 'action' AND e.action IN ('fewer', 'pause', 'off')
                GROUP BY 1, 2, 3, 4, 5
                """
            ).map { row -> (action: String, key: [String], count: Int) in
                let (action, variant, platform, arm, timing, count) = try row.decode((String, String, String, String, String, Int).self)
                return (action, [variant, platform, arm, timing], count)
            }
            return ActionCounts.merge(rows)
        }
    }

    /// Per reader sent a message of the week with a timing: whether a `pause` or `off` change with
    /// source `action` came within 7 days of their due time (the changes' reader index), grouped.
    package func stoppedReaders(week: String) async throws -> [StoppedReaders] {
        try await withPool { pool in
            let rows = try await pool.rows(
                """
                SELECT r.timing, count(*)::int8, count(*) FILTER (WHERE EXISTS (
                    SELECT 1 FROM digest_preference_changes c
                    WHERE c.user_id = r.user_id COLLATE "C" AND c.at >= r.due AND c.at < r.due + interval '7 days'  -- StoppedReaders.window
                        AND c.source = 'action' AND c.action IN ('pause', 'off')))::int8
                FROM (
                    SELECT user_id, timing, min(available_at) AS due FROM digest_outbox
                    WHERE week = \(week) AND timing IS NOT NULL
                    GROUP BY user_id, timing HAVING bool_or(state = 'sent')) r
                GROUP BY 1
                """
            ).map { row -> (timing: String, readers: Int, stopped: Int) in
                let (timing, readers, stopped) = try row.decode((String, Int, Int).self)
                return (timing, readers, stopped)
            }
            return StoppedReaders.merge(rows)
        }
    }
}
