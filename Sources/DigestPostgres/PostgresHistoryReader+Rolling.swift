public import DigestCore
public import DigestStore
import PostgresNIO

/// Rolling runs on PostgreSQL: the week's zone chunks (planned by
/// ``PostgresRunLedger/zoneCursors(week:zones:endsAt:now:)``) are claimed under a lease like the
/// chunks of a `--week` run, so any number of processes share the zones whose week has ended.
extension PostgresHistoryReader {
    /// The time zones of `digest_users`, each once (a skip scan of the index on the zone).
    public func timeZones() async throws -> [String] {
        try await PostgresRollingPlan.requireSeq(pool)
        return try await pool.rows(
            """
            WITH RECURSIVE z(zone) AS (
                SELECT min(time_zone) FROM digest_users
                UNION ALL
                SELECT (SELECT min(time_zone) FROM digest_users WHERE time_zone > z.zone) FROM z WHERE z.zone IS NOT NULL)
            SELECT zone FROM z WHERE zone IS NOT NULL
            """
        ).map { try $0.decode(String.self) }
    }

    /// Claims the next zone chunk of `week` among `zones` (a ready one, or one whose lease ended) and
    /// reads its users, in id order, with their devices; the batch's cursor names the chunk (its zone
    /// and last `seq`). While every other open chunk is held by live workers, waits for them to
    /// finish or for a lease to end, so that the walk ends (no users, every zone exhausted) only once
    /// every chunk of these zones is done. A chunk whose users have all moved away is done at once.
    public func nextBatch(week: ISOWeek, zones: [ZoneCursor], limit: Int) async throws -> ZoneBatch {
        byList = true
        let names = zones.map(\.zone)
        let worker = coordination.settings.worker
        while let claimed = try await claimChunk(of: week, zones: names) {
            let chunk = claimed.number
            guard let zone = claimed.zone, let after = claimed.afterSeq, let through = claimed.throughSeq else {
                throw PostgresStoreError("\(pool.location): zone chunk \(chunk) of \(week) has no zone or seq range")
            }
            let users = try await withDevices(
                try await pool.rows(
                    """
                    SELECT \(unescaped: Self.userColumns())
                    WHERE u.time_zone = \(zone) AND u.seq > \(after) AND u.seq <= \(through)
                    ORDER BY u.id COLLATE "C"
                    """))
            guard !users.isEmpty else {
                try await pool.run(
                    """
                    UPDATE digest_run_chunks SET state = 'done', done_by = \(worker), done_at = now(),
                        lease_owner = NULL, leased_until = NULL
                    WHERE week = \(week.description) AND chunk = \(chunk) AND state <> 'done'
                    """)
                coordination.released(chunk)
                continue
            }
            return ZoneBatch(users: users, cursors: [ZoneCursor(zone: zone, seq: through, taken: users.count)], exhausted: [])
        }
        return ZoneBatch(users: [], cursors: [], exhausted: names)
    }

    /// The users in the open zone chunks of `week` among `zones`.
    public func countUsers(week: ISOWeek, zones: [ZoneCursor]) async throws -> Int {
        try await pool.rows(
            """
            SELECT coalesce(sum(users), 0)::int8 FROM digest_run_chunks
            WHERE week = \(week.description) AND time_zone = ANY(\(zones.map(\.zone))::text[]) AND state <> 'done'
            """
        ).first?.decode(Int.self) ?? 0
    }
}

/// What rolling runs on PostgreSQL ask of the `digest_users` view.
enum PostgresRollingPlan {
    /// Fails with what to do unless `digest_users` has the `seq` column rolling runs walk (an
    /// adopter's own view from before it was part of the contract may lack it).
    static func requireSeq(_ pool: PostgresPool) async throws {
        guard try await pool.relation("digest_users", hasColumn: "seq") else {
            throw PostgresStoreError(
                "\(pool.location): the digest_users view has no seq column, which rolling runs (digest run without --week) need: add it (docs/005-postgresql.md) or pass --week",
                kind: .configuration)
        }
    }
}
