public import DigestStore

/// ``EventSink`` on SQLite: every request's events are written on the store's writer connection, each
/// request in one transaction (SQLite has one writer; requests queue for it).
public final class SQLiteEventSink: EventSink {
    let pool: SQLitePool

    init(pool: SQLitePool) {
        self.pool = pool
    }

    public func record(_ events: [IndexedEvent], now: Int64) async throws -> EventBatchResult {
        guard !events.isEmpty else { return EventBatchResult() }
        return try await pool.write { try SQLiteEventQueries(connection: $0.connection).record(events, now: now) }
    }
}

/// The statements of the event sink and the report, on one connection.
struct SQLiteEventQueries {
    let connection: SQLiteConnection

    func record(_ events: [IndexedEvent], now: Int64) throws -> EventBatchResult {
        try connection.transaction {
            let find = try connection.statement(
                """
                SELECT created_at, week, variant, platform, locale, json_extract(report, '$.arm')
                FROM digest_outbox WHERE message_id = ?
                """)
            var targets: [String: EventTarget] = [:]
            for id in EventScreen.messageIDs(events) {
                find.reset()
                find.bind(id, at: 1)
                if try find.step() {
                    targets[id] = EventTarget(
                        createdAt: find.int64(0), week: find.string(1), variant: find.string(2), platform: find.string(3),
                        locale: find.optionalString(4), arm: find.optionalString(5))
                }
            }
            find.reset()
            // Not in the outbox: a test send's message, perhaps.
            let test = try connection.statement("SELECT sent_at, week, variant, platform FROM digest_test_sends WHERE message_id = ?")
            for id in EventScreen.messageIDs(events) where targets[id] == nil {
                test.reset()
                test.bind(id, at: 1)
                if try test.step() {
                    targets[id] = EventTarget(
                        createdAt: test.int64(0), week: test.string(1), variant: test.string(2), platform: test.string(3), locale: nil, arm: nil,
                        isTest: true)
                }
            }
            test.reset()
            let (insert, rejected) = EventScreen.screen(events, targets: targets)
            let testEvent = try connection.statement(
                "INSERT INTO digest_test_events (message_id, type, action, at, received_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
            var tests = 0, testsAccepted = 0
            for (item, target) in insert where target.isTest {
                testEvent.reset()
                testEvent.bind(item.event.messageID, at: 1)
                testEvent.bind(item.event.type.rawValue, at: 2)
                testEvent.bind(item.event.action, at: 3)
                testEvent.bind(item.event.at, at: 4)
                testEvent.bind(now, at: 5)
                try testEvent.run()
                tests += 1
                testsAccepted += connection.changes
            }
            let statement = try connection.statement(
                """
                INSERT INTO digest_events (message_id, type, action, at, received_at, week, variant, platform, locale, arm)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """)
            var accepted = 0
            for (item, target) in insert where !target.isTest {
                statement.reset()
                statement.bind(item.event.messageID, at: 1)
                statement.bind(item.event.type.rawValue, at: 2)
                statement.bind(item.event.action, at: 3)
                statement.bind(item.event.at, at: 4)
                statement.bind(now, at: 5)
                statement.bind(target.week, at: 6)
                statement.bind(target.variant, at: 7)
                statement.bind(target.platform, at: 8)
                statement.bind(target.locale, at: 9)
                statement.bind(target.arm, at: 10)
                try statement.run()
                accepted += connection.changes
            }
            return EventBatchResult(
                accepted: accepted + testsAccepted, duplicates: insert.count - accepted - testsAccepted, rejected: rejected, test: testsAccepted)
        }
    }

    func counts(week: String) throws -> [EventCounts] {
        let sent = try connection.statement(
            """
            SELECT variant, platform, coalesce(locale, ''), coalesce(json_extract(report, '$.arm'), ''), count(*)
            FROM digest_outbox
            WHERE dedupe_key >= ?1 || ':' AND dedupe_key < ?1 || ';' AND week = ?1 AND +state = 'sent'
            GROUP BY 1, 2, 3, 4
            """)
        // The week's rows are one range of the dedupe key's unique index (`<week>:<user>:<token>`); the
        // unary `+` keeps the planner off the lease index, whose `state` would walk every week's sent rows.
        sent.bind(week, at: 1)
        var sentRows: [([String], Int)] = []
        while try sent.step() {
            sentRows.append(([sent.string(0), sent.string(1), sent.string(2), sent.string(3)], sent.int(4)))
        }
        // What a prune deleted of the week's sent messages.
        let pruned = try connection.statement("SELECT variant, platform, locale, arm, sent FROM digest_pruned_sent WHERE week = ?")
        pruned.bind(week, at: 1)
        while try pruned.step() {
            sentRows.append(([pruned.string(0), pruned.string(1), pruned.string(2), pruned.string(3)], pruned.int(4)))
        }
        let events = try connection.statement(
            """
            SELECT variant, platform, coalesce(locale, ''), coalesce(arm, ''), type, count(*)
            FROM digest_events WHERE week = ? GROUP BY 1, 2, 3, 4, 5
            """)
        events.bind(week, at: 1)
        var eventRows: [([String], AppEventType, Int)] = []
        while try events.step() {
            guard let type = AppEventType(rawValue: events.string(4)) else { continue }
            eventRows.append(([events.string(0), events.string(1), events.string(2), events.string(3)], type, events.int(5)))
        }
        return EventCounts.merge(sent: sentRows, events: eventRows)
    }

    /// Per reader of the week's rows with a timing (the dedupe key's range, as ``counts(week:)``):
    /// sent or not and the minutes from due to the first `opened` event, grouped.
    func timingReaders(week: String) throws -> [TimingReaders] {
        let statement = try connection.statement(
            """
            SELECT timing, sent, (first_open - due) / 60, count(*) FROM (
                SELECT o.timing AS timing, max(o.state = 'sent') AS sent, min(o.available_at) AS due, min(e.at) AS first_open
                FROM digest_outbox o
                LEFT JOIN digest_events e ON e.week = ?1 AND e.message_id = o.message_id AND e.type = 'opened'
                WHERE o.dedupe_key >= ?1 || ':' AND o.dedupe_key < ?1 || ';' AND o.week = ?1 AND o.timing IS NOT NULL
                GROUP BY o.user_id, o.timing)
            GROUP BY 1, 2, 3
            """)
        statement.bind(week, at: 1)
        var rows: [(timing: String, sent: Bool, minutes: Int?, readers: Int)] = []
        while try statement.step() {
            rows.append((statement.string(0), statement.int(1) != 0, statement.isNull(2) ? nil : statement.int(2), statement.int(3)))
        }
        return TimingReaders.merge(rows)
    }
}

extension SQLiteDatabase {
    public func withEventSink<T>(_ body: (SQLiteEventSink) async throws -> T) async throws -> T {
        let pool = try await opened()
        // Events land at random places of digest_events' key: a larger page cache keeps its inner
        // pages and the outbox's id index (migration 10) in memory (64 MiB; the default is 2 MiB). The
        // writer keeps it once set.
        try await pool.write { try $0.connection.execute("PRAGMA cache_size = -65536") }
        return try await body(SQLiteEventSink(pool: pool))
    }

    public func eventCounts(week: String) async throws -> [EventCounts] {
        try await read { try SQLiteEventQueries(connection: $0).counts(week: week) }
    }
}

extension SQLiteDatabase: TimingViews {
    package func timingReaders(week: String) async throws -> [TimingReaders] {
        try await read { try SQLiteEventQueries(connection: $0).timingReaders(week: week) }
    }
}
