import DigestCore
import DigestStore
import Foundation

/// The statements behind ``SQLiteRunLedger`` (`digest_outbox` and `digest_runs` in one database):
/// synchronous, on the ledger's own thread, where its connection lives.
final class SQLiteLedgerQueries {
    let connection: SQLiteConnection
    private var totals = RunCounters()

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    func begin(week: ISOWeek, now: Int64) throws -> RunCheckpoint {
        try connection.transaction {
            let insert = try connection.statement(
                "INSERT INTO digest_runs (week, cursor, state, started_at) VALUES (?, 0, 'running', ?) ON CONFLICT (week) DO NOTHING")
            insert.bind(week.description, at: 1)
            insert.bind(now, at: 2)
            try insert.run()
            let select = try connection.statement("SELECT cursor, state, counters FROM digest_runs WHERE week = ?")
            select.bind(week.description, at: 1)
            guard try select.step() else { throw SQLiteError(code: 1, message: "run row vanished", path: connection.path) }
            let counters = (try? JSONDecoder().decode(RunCounters.self, from: Data(select.string(2).utf8))) ?? RunCounters()
            totals = counters
            let cursor = select.int64(0)
            let checkpoint = RunCheckpoint(
                cursor: cursor, finished: select.string(1) == "done", counters: counters,
                resumed: cursor > 0 ? "resumed after user key \(cursor)" : nil)
            select.reset()
            return checkpoint
        }
    }

    func commit(
        week: ISOWeek, through key: Int64, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) throws -> Int {
        try connection.transaction { try write(week: week, through: key, messages: messages, counters: counters, now: now) }
    }

    /// The batch's messages, picks and the week's cursor and totals, inside the caller's transaction.
    private func write(
        week: ISOWeek, through key: Int64, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) throws -> Int {
        do {
            let insert = try connection.statement(
                """
                INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at,
                    window_end, quiet_until, expires_at, token_key, message_id, locale, provider, target, headers, timing, due_local)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """)
            let pick = try connection.statement(
                "INSERT INTO digest_picks (user_id, week, picks) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
            // Only a token that left a reader can reach a second reader the same week (the import keeps a
            // token under one): its messages carry the key the outbox's partial unique index checks.
            let departed = try connection.statement("SELECT 1 FROM digest_departed_tokens WHERE token_hash = ?")
            // Usually no token has departed: one look at the table (inside this write transaction, so
            // no import can add one meanwhile) spares a probe per message.
            let anyDeparted = try connection.statement("SELECT EXISTS (SELECT 1 FROM digest_departed_tokens)")
            let probe = try anyDeparted.step() && anyDeparted.int(0) != 0
            anyDeparted.reset()
            var inserted = 0
            var lastPicked: (user: String, week: String)?
            for message in messages {
                // One row per user and week (a user's messages come together and share their picks).
                if !message.picks.isEmpty, lastPicked?.user != message.userID || lastPicked?.week != message.week {
                    lastPicked = (message.userID, message.week)
                    pick.reset()
                    pick.bind(message.userID, at: 1)
                    pick.bind(message.week, at: 2)
                    pick.bind(SQLiteHistoryQueries.encodeTopics(message.picks), at: 3)
                    try pick.run()
                }
                insert.reset()
                insert.bind(message.dedupeKey, at: 1)
                insert.bind(message.week, at: 2)
                insert.bind(message.userID, at: 3)
                insert.bind(message.platform.rawValue, at: 4)
                insert.bind(message.variant.rawValue, at: 5)
                insert.bindText(message.message, at: 6)
                insert.bind(message.report, at: 7)
                insert.bind(message.availableAt, at: 8)
                insert.bind(now, at: 9)
                insert.bind(message.windowEnd, at: 10)
                insert.bind(message.quietUntil, at: 11)
                insert.bind(message.expiresAt, at: 12)
                var moved = false
                if probe {
                    departed.reset()
                    departed.bind(String(message.tokenHash), at: 1)
                    moved = try departed.step()
                    departed.reset()
                }
                insert.bind(moved ? message.tokenKey : nil, at: 13)
                insert.bind(message.messageID, at: 14)
                insert.bind(message.locale, at: 15)
                insert.bind(message.provider.rawValue, at: 16)
                insert.bind(message.target, at: 17)
                insert.bind(message.headers, at: 18)
                insert.bind(message.timing?.rawValue, at: 19)
                insert.bind(message.dueLocal, at: 20)
                try insert.run()
                inserted += connection.changes
            }
            var batch = counters
            batch.enqueued = inserted
            var newTotals = totals
            newTotals.add(batch)
            let update = try connection.statement("UPDATE digest_runs SET cursor = ?, counters = ? WHERE week = ?")
            update.bind(key, at: 1)
            update.bind(String(decoding: try JSONEncoder.sorted.encode(newTotals), as: UTF8.self), at: 2)
            update.bind(week.description, at: 3)
            try update.run()
            totals = newTotals
            return inserted
        }
    }

    func zoneCursors(week: ISOWeek, zones: [String], endsAt: [Int64], now: Int64) throws -> [ZoneCursor] {
        _ = try begin(week: week, now: now)
        return try connection.transaction {
            let insert = try connection.statement(
                """
                INSERT INTO digest_zone_runs (week, time_zone, cursor, ends_at, updated_at) VALUES (?1, ?2, 0, ?3, ?4)
                ON CONFLICT (week, time_zone) DO NOTHING
                """)
            let select = try connection.statement("SELECT cursor FROM digest_zone_runs WHERE week = ? AND time_zone = ?")
            var cursors: [ZoneCursor] = []
            for (zone, end) in zip(zones, endsAt) {
                insert.reset()
                insert.bind([week.description, zone, end, now])
                try insert.run()
                select.reset()
                select.bind(week.description, at: 1)
                select.bind(zone, at: 2)
                cursors.append(ZoneCursor(zone: zone, seq: try select.step() ? select.int64(0) : 0))
            }
            select.reset()
            return cursors
        }
    }

    func commit(
        week: ISOWeek, zones: [ZoneCursor], users: Int, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) throws -> Int {
        try connection.transaction {
            let inserted = try write(week: week, through: 0, messages: messages, counters: counters, now: now)
            let move = try connection.statement(
                """
                UPDATE digest_zone_runs SET cursor = max(cursor, ?3), users = users + ?4, updated_at = ?5
                WHERE week = ?1 AND time_zone = ?2
                """)
            for zone in zones {
                move.reset()
                move.bind([week.description, zone.zone, zone.seq, zone.taken, now])
                try move.run()
            }
            return inserted
        }
    }

    func resumeWeek() throws -> ISOWeek? {
        let statement = try connection.statement(
            "SELECT coalesce((SELECT min(week) FROM digest_runs WHERE state = 'running'), (SELECT max(week) FROM digest_runs))")
        defer { statement.reset() }
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return try? ISOWeek(parsing: statement.string(0))
    }

    func finishRolling(week: ISOWeek, complete: Bool, now: Int64) throws -> RunCounters {
        if complete { return try finish(week: week, now: now) }
        return totals
    }

    func maintain() throws {
        try connection.restartWAL()
    }

    func finish(week: ISOWeek, now: Int64) throws -> RunCounters {
        let update = try connection.statement("UPDATE digest_runs SET state = 'done', finished_at = ? WHERE week = ?")
        update.bind(now, at: 1)
        update.bind(week.description, at: 2)
        try update.run()
        return totals
    }
}
