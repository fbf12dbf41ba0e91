public import DigestCore
public import DigestStore
import Foundation
import PostgresNIO

/// ``RunLedger`` on PostgreSQL: the week's run and its chunks in `digest_runs` and
/// `digest_run_chunks`; a chunk's messages and its completion commit in one statement.
public final class PostgresRunLedger: RunLedger {
    let pool: PostgresPool
    let coordination: PostgresRunCoordination

    init(pool: PostgresPool, coordination: PostgresRunCoordination) {
        self.pool = pool
        self.coordination = coordination
    }

    /// Joins the week's shared run, splitting its users into chunks when this process is the first.
    public func begin(week: ISOWeek, now: Int64) async throws -> RunCheckpoint {
        let size = max(1, coordination.settings.chunkSize)
        let name = week.description
        try await pool.transaction { connection in
            // A second process starting at the same moment waits here for the first one's split.
            try await connection.run(
                """
                INSERT INTO digest_runs (week, state, chunk_size, chunks, users)
                VALUES (\(name), 'running', \(size), 0, 0) ON CONFLICT (week) DO NOTHING
                """)
            // The first `--week` process splits the week (a rolling run may have begun it with zone
            // chunks only); the others wait on the run row for its split and find it made.
            try await connection.run("SELECT 1 FROM digest_runs WHERE week = \(name) FOR UPDATE")
            let split = try await connection.rows(
                "SELECT 1 FROM digest_run_chunks WHERE week = \(name) AND time_zone IS NULL LIMIT 1")
            guard split.isEmpty else { return }
            // Chunk k holds the users in (after_user, through_user] in byte order; the last one is
            // open-ended, so users added later still belong to a chunk.
            try await connection.run(
                """
                INSERT INTO digest_run_chunks (week, chunk, after_user, through_user)
                SELECT \(name),
                       (SELECT coalesce(max(chunk), -1) FROM digest_run_chunks WHERE week = \(name))
                           + (row_number() OVER (ORDER BY through COLLATE "C" NULLS LAST))::int,
                       lag(through) OVER (ORDER BY through COLLATE "C" NULLS LAST), through
                FROM (
                    SELECT id AS through FROM (
                        SELECT id, row_number() OVER (ORDER BY id COLLATE "C") AS n FROM digest_users) numbered
                    WHERE n % \(size) = 0
                    UNION ALL SELECT NULL) bounds
                """)
            try await connection.run(
                """
                UPDATE digest_runs SET
                    chunks = (SELECT count(*) FROM digest_run_chunks WHERE week = \(name)),
                    users = (SELECT count(*) FROM digest_users)
                WHERE week = \(name)
                """)
        }
        let run = try await pool.rows(
            """
            SELECT r.state, count(c.chunk), r.chunks FROM digest_runs r
            LEFT JOIN digest_run_chunks c ON c.week = r.week AND c.state = 'done' AND c.time_zone IS NULL
            WHERE r.week = \(name) GROUP BY r.state, r.chunks
            """)
        guard let row = run.first else { throw PostgresStoreError("\(pool.location): the run row of \(name) vanished") }
        let (state, done, chunks) = try row.decode((String, Int, Int).self)
        return RunCheckpoint(
            cursor: Int64(done), finished: state == "done", counters: try await totals(week: name),
            resumed: done > 0 ? "joined the shared run with \(done) of \(chunks) chunks done" : nil)
    }

    /// Enqueues the chunk's messages (`ON CONFLICT DO NOTHING`) and marks the chunk done, in one
    /// statement. A chunk another worker finished first keeps that worker's counters.
    public func commit(
        week: ISOWeek, through chunk: Int64, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int {
        // One picks row per user and week (a user's messages come together and share their picks), the
        // ids joined by a unit separator that the statement splits again.
        var pickUsers: [String] = [], pickWeeks: [String] = [], pickLists: [String] = []
        for message in messages where !message.picks.isEmpty {
            if pickUsers.last != message.userID || pickWeeks.last != message.week {
                pickUsers.append(message.userID)
                pickWeeks.append(message.week)
                pickLists.append(message.picks.joined(separator: "\u{1F}"))
            }
        }
        // The messages' columns, each written into its bind straight from the messages. 0 stands for
        // NULL (no quiet hours, no expiry); "" for a NULL locale, no headers (FCM), no timing, no
        // local due time.
        var binds = PostgresBindings(capacity: 27)
        binds.append(PostgresMessageTextColumn(messages, .dedupeKey))
        binds.append(PostgresMessageTextColumn(messages, .week))
        binds.append(PostgresMessageTextColumn(messages, .userID))
        binds.append(PostgresMessageTextColumn(messages, .platform))
        binds.append(PostgresMessageTextColumn(messages, .variant))
        binds.append(PostgresMessageTextColumn(messages, .message))
        binds.append(PostgresMessageTextColumn(messages, .report))
        binds.append(PostgresMessageInt8Column(messages, .availableAt))
        binds.append(PostgresMessageInt8Column(messages, .windowEnd))
        binds.append(PostgresMessageInt8Column(messages, .quietUntil))
        binds.append(PostgresMessageInt8Column(messages, .expiresAt))
        binds.append(PostgresMessageTextColumn(messages, .tokenKey))
        binds.append(PostgresMessageTextColumn(messages, .messageID))
        binds.append(PostgresMessageTextColumn(messages, .locale))
        binds.append(PostgresMessageTextColumn(messages, .provider))
        binds.append(PostgresMessageTextColumn(messages, .target))
        binds.append(PostgresMessageTextColumn(messages, .headers))
        binds.append(PostgresMessageTextColumn(messages, .timing))
        binds.append(PostgresMessageTextColumn(messages, .dueLocal))
        binds.append(now)
        binds.append(pickUsers)
        binds.append(pickWeeks)
        binds.append(pickLists)
        binds.append(coordination.settings.worker)
        binds.append(String(decoding: try Self.encoder.encode(counters), as: UTF8.self))
        binds.append(week.description)
        binds.append(Int(chunk))
        let inserted = try await pool.rows(CommitChunk(binds: binds))
        coordination.released(Int(chunk))
        return inserted.first ?? 0
    }

    /// ``commit(week:through:messages:counters:now:)``'s statement: the chunk's messages (`ON CONFLICT
    /// DO NOTHING`), its readers' picks and the chunk marked done, returning how many messages it
    /// inserted. Prepared by name, so a chunk's commit is bound and run rather than parsed and planned
    /// each time; the generic plan the server keeps reads the chunk's arrays from the parameters,
    /// where a custom plan copied each of them (megabytes of message bodies) into the plan.
    struct CommitChunk: PostgresPreparedStatement {
        static let sql = """
            WITH inserted AS (
                INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at,
                                           window_end, quiet_until, expires_at, token_key, message_id, locale, provider, target, headers,
                                           timing, due_local)
                SELECT k, w, u, p, v, m::json, r::jsonb, to_timestamp(a), to_timestamp($20),
                       to_timestamp(nullif(we, 0)), to_timestamp(nullif(qu, 0)), to_timestamp(nullif(ex, 0)), tk, mi, nullif(lo, ''),
                       pr, ta, nullif(h, '')::json, nullif(ti, ''), nullif(dl, '')
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::int8[],
                            $10::int8[], $11::int8[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
                            $18::text[], $19::text[])
                     AS t(k, w, u, p, v, m, r, a, we, qu, ex, tk, mi, lo, pr, ta, h, ti, dl)
                ON CONFLICT DO NOTHING
                RETURNING 1),
            picked AS (
                INSERT INTO digest_picks (user_id, week, picks)
                SELECT u, w, string_to_array(p, chr(31))
                FROM unnest($21::text[], $22::text[], $23::text[]) AS t(u, w, p)
                ON CONFLICT (user_id, week) DO NOTHING),
            done AS (
                UPDATE digest_run_chunks
                SET state = 'done', done_by = $24, done_at = now(), lease_owner = NULL, leased_until = NULL,
                    counters = jsonb_set($25::jsonb, '{enqueued}', to_jsonb((SELECT count(*) FROM inserted)))
                WHERE week = $26 AND chunk = $27 AND state <> 'done'
                RETURNING 1)
            SELECT (SELECT count(*) FROM inserted), (SELECT count(*) FROM done)
            """
        /// Messages `$1…$19` (one array a column), `$20` the instant, picks `$21…$23`, then the
        /// worker, the counters' JSON, the week and the chunk.
        let binds: PostgresBindings

        func makeBindings() -> PostgresBindings { binds }

        func decodeRow(_ row: PostgresRow) throws -> Int { try row.decode((Int, Int).self).0 }
    }

    public func maintain() async throws {}

    /// Marks the week done once every chunk is, and returns the week's totals over its done chunks.
    public func finish(week: ISOWeek, now: Int64) async throws -> RunCounters {
        let name = week.description
        try await pool.run(
            """
            UPDATE digest_runs SET state = 'done', finished_at = now()
            WHERE week = \(name) AND state = 'running'
              AND NOT EXISTS (SELECT 1 FROM digest_run_chunks WHERE week = \(name) AND state <> 'done')
            """)
        return try await totals(week: name)
    }

    func totals(week: String) async throws -> RunCounters {
        var totals = RunCounters()
        let decoder = JSONDecoder()
        for row in try await pool.rows(
            "SELECT counters::text FROM digest_run_chunks WHERE week = \(week) AND state = 'done' AND counters IS NOT NULL")
        {
            totals.add(try decoder.decode(RunCounters.self, from: Data(try row.decode(String.self).utf8)))
        }
        return totals
    }
}

extension PostgresRunLedger {
    /// Sorted keys, so stored JSON is stable.
    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
