public import DigestStore

/// `digest report`'s button presses (docs/009, "The report"): each one statement over the week's rows.
extension SQLiteEventQueries {
    /// The week's sent messages (the dedupe key's range, as ``counts(week:)``, and what a prune
    /// deleted) and `fewer`/`pause`/`off` events (the week's prefix of `digest_events`' key, their
    /// timing from the outbox by the message id index) per variant, platform, arm and timing.
    func actionCounts(week: String) throws -> [ActionCounts] {
        let statement = try connection.statement(
            """
            SELECT '', variant, platform, coalesce(json_extract(report, '$.arm'), ''), coalesce(timing, ''), count(*)
            FROM digest_outbox
            WHERE dedupe_key >= ?1 || ':' AND dedupe_key < ?1 || ';' AND week = ?1 AND +state = 'sent'
            GROUP BY 2, 3, 4, 5
            UNION ALL
            SELECT '', variant, platform, arm, '', sent FROM digest_pruned_sent WHERE week = ?1
            UNION ALL
            SELECT e.action, e.variant, e.platform, coalesce(e.arm, ''), coalesce(o.timing, ''), count(*)
            FROM digest_events e LEFT JOIN digest_outbox o ON o.message_id = e.message_id
            WHERE e.week = ?1 AND e.type = 'action' AND e.action IN ('fewer', 'pause', 'off')
            GROUP BY 1, 2, 3, 4, 5
            """)
        statement.bind(week, at: 1)
        var rows: [(action: String, key: [String], count: Int)] = []
        while try statement.step() {
            rows.append(
                (statement.string(0), [statement.string(1), statement.string(2), statement.string(3), statement.string(4)], statement.int(5)))
        }
        return ActionCounts.merge(rows)
    }

    /// Per reader sent a message of the week with a timing: whether a `pause` or `off` change with
    /// source `action` came within 7 days of their due time (the changes' reader index), grouped.
    func stoppedReaders(week: String) throws -> [StoppedReaders] {
        let statement = try connection.statement(
            """
            SELECT r.timing, count(*), sum(EXISTS (
                SELECT 1 FROM users u JOIN digest_preference_changes c ON c.user_pk = u.pk
                WHERE u.id = r.user_id AND c.at >= r.due AND c.at < r.due + ?2
                    AND c.source = 'action' AND c.action IN ('pause', 'off')))
            FROM (
                SELECT o.user_id AS user_id, o.timing AS timing, min(o.available_at) AS due
                FROM digest_outbox o
                WHERE o.dedupe_key >= ?1 || ':' AND o.dedupe_key < ?1 || ';' AND o.week = ?1 AND o.timing IS NOT NULL
                GROUP BY o.user_id, o.timing HAVING max(o.state = 'sent')) r
            GROUP BY 1
            """)
        // The EXISTS inside the aggregate: one look-up of the changes' (user, at) index a reader.
        statement.bind(week, at: 1)
        statement.bind(StoppedReaders.window, at: 2)
        var rows: [(timing: String, readers: Int, stopped: Int)] = []
        while try statement.step() {
            rows.append((statement.string(0), statement.int(1), statement.int(2)))
        }
        return StoppedReaders.merge(rows)
    }
}

extension SQLiteDatabase: ActionViews {
    package func actionCounts(week: String) async throws -> [ActionCounts] {
        try await read { try SQLiteEventQueries(connection: $0).actionCounts(week: week) }
    }

    package func stoppedReaders(week: String) async throws -> [StoppedReaders] {
        try await read { try SQLiteEventQueries(connection: $0).stoppedReaders(week: week) }
    }
}
