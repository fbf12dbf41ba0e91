public import DigestCore
public import DigestStore
import PostgresNIO

/// Rolling runs on PostgreSQL. Each (week, zone) has a plan (`digest_zone_runs.planned`: the
/// highest `seq` already in a chunk). When a run finds a zone whose week has ended, it plans the
/// zone's users past the plan into chunks of `seq` ranges (`digest_run_chunks` rows with a
/// `time_zone`), which every process then claims like the chunks of a `--week` run. A user added,
/// moved into the zone or given a new device since takes a `seq` past the plan, so the next run
/// plans a chunk for them: a finished chunk never hides a later reader, and the outbox's key per
/// token keeps a user met twice from getting two messages on one device.
extension PostgresRunLedger {
    /// Plans the zones' new users into chunks (planners of one week take turns on the run's row) and
    /// returns, per zone, the highest `seq` of its done chunks (0: the week has not walked it yet).
    public func zoneCursors(week: ISOWeek, zones: [String], endsAt: [Int64], now: Int64) async throws -> [ZoneCursor] {
        try await PostgresRollingPlan.requireSeq(pool)
        let size = max(1, coordination.settings.chunkSize)
        let name = week.description
        return try await pool.transaction { connection in
            try await connection.run(
                """
                INSERT INTO digest_runs (week, state, chunk_size, chunks, users)
                VALUES (\(name), 'running', \(size), 0, 0) ON CONFLICT (week) DO NOTHING
                """)
            try await connection.run("SELECT 1 FROM digest_runs WHERE week = \(name) FOR UPDATE")
            try await connection.run(
                """
                INSERT INTO digest_zone_runs (week, time_zone, planned, ends_at)
                SELECT \(name), z, 0, to_timestamp(e) FROM unnest(\(zones)::text[], \(endsAt)::int8[]) AS t(z, e)
                ON CONFLICT (week, time_zone) DO NOTHING
                """)
            // Chunk bounds: every `size`-th user past the plan, and the zone's last one.
            let planned = try await connection.rows(
                """
                WITH zones AS (
                    SELECT time_zone, planned FROM digest_zone_runs WHERE week = \(name) AND time_zone = ANY(\(zones)::text[])),
                fresh AS (
                    SELECT z.time_zone, z.planned, u.seq,
                           row_number() OVER (PARTITION BY z.time_zone ORDER BY u.seq) AS n,
                           count(*) OVER (PARTITION BY z.time_zone) AS total
                    FROM zones z CROSS JOIN LATERAL (
                        SELECT seq FROM digest_users WHERE time_zone = z.time_zone AND seq > z.planned) u),
                bounds AS (
                    SELECT time_zone, planned, seq AS through, n FROM fresh WHERE n % \(size) = 0 OR n = total),
                numbered AS (
                    SELECT time_zone,
                           coalesce(lag(through) OVER (PARTITION BY time_zone ORDER BY through), planned) AS after,
                           through,
                           n - coalesce(lag(n) OVER (PARTITION BY time_zone ORDER BY through), 0) AS users,
                           (SELECT coalesce(max(chunk), -1) FROM digest_run_chunks WHERE week = \(name))
                               + row_number() OVER (ORDER BY time_zone, through) AS chunk
                    FROM bounds),
                inserted AS (
                    INSERT INTO digest_run_chunks (week, chunk, time_zone, after_seq, through_seq, users)
                    SELECT \(name), chunk, time_zone, after, through, users FROM numbered
                    RETURNING time_zone, through_seq, users),
                moved AS (
                    UPDATE digest_zone_runs z SET planned = m.through
                    FROM (SELECT time_zone, max(through_seq) AS through FROM inserted GROUP BY time_zone) m
                    WHERE z.week = \(name) AND z.time_zone = m.time_zone
                    RETURNING 1)
                SELECT count(*)::int8, coalesce(sum(users), 0)::int8 FROM inserted
                """)
            let (chunks, users) = try planned.first?.decode((Int, Int).self) ?? (0, 0)
            if chunks > 0 {
                try await connection.run(
                    "UPDATE digest_runs SET chunks = chunks + \(chunks), users = users + \(users), state = 'running', finished_at = NULL WHERE week = \(name)")
            }
            var done: [String: Int64] = [:]
            for row in try await connection.rows(
                """
                SELECT time_zone, max(through_seq) FROM digest_run_chunks
                WHERE week = \(name) AND time_zone = ANY(\(zones)::text[]) AND state = 'done'
                GROUP BY time_zone
                """)
            {
                let (zone, through) = try row.decode((String, Int64).self)
                done[zone] = through
            }
            return zones.map { ZoneCursor(zone: $0, seq: done[$0] ?? 0) }
        }
    }

    /// Enqueues the batch's messages and marks its chunk (named by the batch's one cursor: zone and
    /// last `seq`) done, in one statement.
    public func commit(
        week: ISOWeek, zones: [ZoneCursor], users: Int, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int {
        guard let cursor = zones.first, zones.count == 1 else {
            throw PostgresStoreError("\(pool.location): a rolling batch on PostgreSQL comes from exactly one chunk (got \(zones.count) zones)")
        }
        let found = try await pool.rows(
            """
            SELECT chunk FROM digest_run_chunks WHERE week = \(week.description) AND time_zone = \(cursor.zone) AND through_seq = \(cursor.seq)
            """)
        guard let chunk = try found.first?.decode(Int.self) else {
            throw PostgresStoreError("\(pool.location): no chunk of \(week) ends at seq \(cursor.seq) in \(cursor.zone)")
        }
        return try await commit(week: week, through: Int64(chunk), messages: messages, counters: counters, now: now)
    }

    /// The oldest week still under way, else the latest week any run started; `nil` before the first.
    public func resumeWeek() async throws -> ISOWeek? {
        guard
            let week = try await pool.rows(
                "SELECT coalesce((SELECT min(week) FROM digest_runs WHERE state = 'running'), (SELECT max(week) FROM digest_runs))"
            ).first?.decode(String?.self)
        else { return nil }
        return try? ISOWeek(parsing: week)
    }

    /// Marks the week done when every zone has ended and no chunk is open; the week's totals.
    public func finishRolling(week: ISOWeek, complete: Bool, now: Int64) async throws -> RunCounters {
        if complete { return try await finish(week: week, now: now) }
        return try await totals(week: week.description)
    }
}
