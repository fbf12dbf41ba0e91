public import DigestStore
import PostgresNIO

/// ``EventSink`` on PostgreSQL: each request's events looked up and inserted in one transaction with
/// `ON CONFLICT DO NOTHING`, so any number of collectors on any number of machines record an event
/// once. Requests recorded at once each borrow a connection of the database's pool.
public final class PostgresEventSink: EventSink {
    let pool: PostgresPool

    init(pool: PostgresPool) {
        self.pool = pool
    }

    public func record(_ events: [IndexedEvent], now: Int64) async throws -> EventBatchResult {
        guard !events.isEmpty else { return EventBatchResult() }
        return try await pool.transaction { connection in
            let ids = EventScreen.messageIDs(events)
            var targets: [String: EventTarget] = [:]
            for row in try await connection.rows(
                """
                SELECT message_id, extract(epoch FROM created_at)::int8, week, variant, platform, locale, report->>'arm'
                FROM digest_outbox WHERE message_id = ANY(\(ids)::text[])
                """)
            {
                let (id, created, week, variant, platform, locale, arm) =
                    try row.decode((String, Int64, String, String, String, String?, String?).self)
                targets[id] = EventTarget(createdAt: created, week: week, variant: variant, platform: platform, locale: locale, arm: arm)
            }
            // Not in the outbox: a test send's message, perhaps.
            let unknown = ids.filter { targets[$0] == nil }
            if !unknown.isEmpty {
                for row in try await connection.rows(
                    "SELECT message_id, extract(epoch FROM sent_at)::int8, week, variant, platform FROM digest_test_sends WHERE message_id = ANY(\(unknown)::text[])")
                {
                    let (id, sent, week, variant, platform) = try row.decode((String, Int64, String, String, String).self)
                    targets[id] = EventTarget(createdAt: sent, week: week, variant: variant, platform: platform, locale: nil, arm: nil, isTest: true)
                }
            }
            let (screened, rejected) = EventScreen.screen(events, targets: targets)
            var testsAccepted = 0
            let tests = screened.filter { $0.1.isTest }
            if !tests.isEmpty {
                let ids = tests.map(\.0.event.messageID), types = tests.map(\.0.event.type.rawValue), actions = tests.map(\.0.event.action)
                let ats = tests.map(\.0.event.at)
                testsAccepted = try await connection.changed(
                    """
                    INSERT INTO digest_test_events (message_id, type, action, at, received_at)
                    SELECT m, t, a, to_timestamp(at), to_timestamp(\(now))
                    FROM unnest(\(ids)::text[], \(types)::text[], \(actions)::text[], \(ats)::int8[]) AS e(m, t, a, at)
                    ON CONFLICT DO NOTHING
                    RETURNING 1
                    """)
            }
            let insert = screened.filter { !$0.1.isTest }
            guard !insert.isEmpty else {
                return EventBatchResult(accepted: testsAccepted, duplicates: tests.count - testsAccepted, rejected: rejected, test: testsAccepted)
            }
            var messageIDs: [String] = [], types: [String] = [], actions: [String] = [], ats: [Int64] = []
            var weeks: [String] = [], variants: [String] = [], platforms: [String] = [], locales: [String] = [], arms: [String] = []
            for (item, target) in insert {
                messageIDs.append(item.event.messageID)
                types.append(item.event.type.rawValue)
                actions.append(item.event.action)
                ats.append(item.event.at)
                weeks.append(target.week)
                variants.append(target.variant)
                platforms.append(target.platform)
                locales.append(target.locale ?? "")  // "" stands for NULL
                arms.append(target.arm ?? "")
            }
            let accepted = try await connection.changed(
                """
                INSERT INTO digest_events (message_id, type, action, at, received_at, week, variant, platform, locale, arm)
                SELECT m, t, a, to_timestamp(at), to_timestamp(\(now)), w, v, p, nullif(l, ''), nullif(r, '')
                FROM unnest(\(messageIDs)::text[], \(types)::text[], \(actions)::text[], \(ats)::int8[], \(weeks)::text[],
                            \(variants)::text[], \(platforms)::text[], \(locales)::text[], \(arms)::text[]) AS e(m, t, a, at, w, v, p, l, r)
                ON CONFLICT DO NOTHING
                RETURNING 1
                """)
            return EventBatchResult(
                accepted: accepted + testsAccepted, duplicates: insert.count - accepted + tests.count - testsAccepted, rejected: rejected,
                test: testsAccepted)
        }
    }
}

extension PostgresDatabase {
    public func withEventSink<T>(_ body: (PostgresEventSink) async throws -> T) async throws -> T {
        try await withPool { try await body(PostgresEventSink(pool: $0)) }
    }

    public func eventCounts(week: String) async throws -> [EventCounts] {
        try await withPool { pool in
            let sent = try await pool.rows(
                """
                SELECT variant, platform, coalesce(locale, ''), coalesce(report->>'arm', ''), count(*)::int8
                FROM digest_outbox WHERE week = \(week) AND state = 'sent' GROUP BY 1, 2, 3, 4
                UNION ALL  -- what a prune deleted of the week's sent messages
                SELECT variant, platform, locale, arm, sent FROM digest_pruned_sent WHERE week = \(week)
                """
            ).map { row -> ([String], Int) in
                let (variant, platform, locale, arm, count) = try row.decode((String, String, String, String, Int).self)
                return ([variant, platform, locale, arm], count)
            }
            let events = try await pool.rows(
                """
                SELECT variant, platform, coalesce(locale, ''), coalesce(arm, ''), type, count(*)::int8
                FROM digest_events WHERE week = \(week) GROUP BY 1, 2, 3, 4, 5
                """
            ).compactMap { row -> ([String], AppEventType, Int)? in
                let (variant, platform, locale, arm, type, count) = try row.decode((String, String, String, String, String, Int).self)
                return AppEventType(rawValue: type).map { ([variant, platform, locale, arm], $0, count) }
            }
            return EventCounts.merge(sent: sent, events: events)
        }
    }
}

extension PostgresDatabase: TimingViews {
    package func timingReaders(week: String) async throws -> [TimingReaders] {
        try await withPool { pool in
            let rows = try await pool.rows(
                """
                SELECT timing, sent, (extract(epoch FROM first_open)::int8 - extract(epoch FROM due)::int8) / 60, count(*)::int8 FROM (
                    SELECT o.timing AS timing, bool_or(o.state = 'sent') AS sent, min(o.available_at) AS due, min(e.at) AS first_open
                    FROM digest_outbox o
                    LEFT JOIN digest_events e ON e.week = \(week) AND e.message_id = o.message_id AND e.type = 'opened'
                    WHERE o.week = \(week) AND o.timing IS NOT NULL
                    GROUP BY o.user_id, o.timing) r
                GROUP BY 1, 2, 3
                """
            ).map { row -> (timing: String, sent: Bool, minutes: Int?, readers: Int) in
                let (timing, sent, minutes, readers) = try row.decode((String, Bool, Int?, Int).self)
                return (timing, sent, minutes, readers)
            }
            return TimingReaders.merge(rows)
        }
    }
}
