public import DigestCore
public import DigestStore
import PostgresNIO

/// ``OutboxConsumer`` on PostgreSQL: many senders lease at once with `FOR UPDATE SKIP LOCKED`, so no
/// two lease the same message and none waits for another. Times are bound as Unix seconds and kept
/// as `timestamptz`.
///
/// Each call is a unit of work on a connection borrowed from the database's pool for its duration (a
/// lease's transaction never interleaves with a settlement's); calls made at once run at once, on
/// connections of their own.
public final class PostgresOutboxConsumer: OutboxConsumer {
    let pool: PostgresPool

    init(pool: PostgresPool) {
        self.pool = pool
    }

    public func lease(
        owner: String, limit: Int, now: Int64, leaseSeconds: Int64, maxAttempts: Int, providers: Set<Provider>
    ) async throws -> [LeasedMessage] {
        let providerNames = providers.map(\.rawValue).sorted()
        return try await pool.transaction { connection in
            try await connection.run(
                """
                WITH expired AS (
                    SELECT id FROM digest_outbox WHERE state = 'leased' AND leased_until <= to_timestamp(\(now))
                    FOR UPDATE SKIP LOCKED)
                UPDATE digest_outbox o
                SET state = CASE WHEN o.attempts >= \(maxAttempts) THEN 'dead' ELSE 'ready' END,
                    last_error = CASE WHEN o.attempts >= \(maxAttempts)
                        THEN 'LEASE_EXPIRED: the sender holding it stopped answering (gave up after ' || o.attempts || ' attempts)'
                        ELSE o.last_error END,
                    settled_at = CASE WHEN o.attempts >= \(maxAttempts) THEN to_timestamp(\(now)) END,
                    lease_owner = NULL, leased_until = NULL
                FROM expired WHERE o.id = expired.id
                """)
            try await Self.settleWindows(connection, now: now)
            let rows = try await connection.rows(
                """
                WITH due AS (
                    SELECT id FROM digest_outbox
                    WHERE state = 'ready' AND available_at <= to_timestamp(\(now)) AND provider = ANY(\(providerNames)::text[])
                    ORDER BY available_at, id LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED)
                UPDATE digest_outbox o
                SET state = 'leased', attempts = o.attempts + 1, lease_owner = \(owner),
                    leased_until = to_timestamp(\(now + leaseSeconds))
                FROM due WHERE o.id = due.id
                RETURNING o.id, o.dedupe_key, o.user_id, o.platform, o.message::text, o.attempts, o.provider, o.target, o.headers::text
                """)
            return try Self.messages(rows).sorted { $0.id < $1.id }
        }
    }

    /// One statement per kind of outcome (not per message), all in one transaction.
    @discardableResult
    public func settle(_ settlements: [Settlement], owner: String, now: Int64, maxAttempts: Int) async throws -> Int {
        guard !settlements.isEmpty else { return 0 }
        var sent: (ids: [Int64], names: [String]) = ([], [])
        var retries: (ids: [Int64], at: [Int64], errors: [String]) = ([], [], [])
        var dead: (ids: [Int64], reasons: [String]) = ([], [])
        var unregistered: (ids: [Int64], diedAt: [Int64]) = ([], [])
        var released: [Int64] = []
        var postponed: (ids: [Int64], until: [Int64], reasons: [String]) = ([], [], [])
        for settlement in settlements {
            switch settlement {
            case .sent(let id, let name): sent.ids.append(id); sent.names.append(name)
            case .retry(let id, let at, let error): retries.ids.append(id); retries.at.append(at); retries.errors.append(error)
            case .dead(let id, let reason): dead.ids.append(id); dead.reasons.append(reason)
            case .unregistered(let id, let reason, let diedAt):
                unregistered.ids.append(id); unregistered.diedAt.append(diedAt ?? now)
                dead.ids.append(id); dead.reasons.append(reason)
            case .release(let id, nil, nil): released.append(id)
            case .release(let id, let until, let reason):
                postponed.ids.append(id); postponed.until.append(until ?? 0); postponed.reasons.append(reason ?? "")
            }
        }
        return try await pool.transaction { [sent, retries, dead, unregistered, released, postponed] connection in
            var applied = 0
            if !sent.ids.isEmpty {
                applied += try await connection.changed(
                    """
                    UPDATE digest_outbox o SET state = 'sent', sent_at = to_timestamp(\(now)), settled_at = to_timestamp(\(now)), fcm_name = t.name,
                        lease_owner = NULL, leased_until = NULL
                    FROM unnest(\(sent.ids)::int8[], \(sent.names)::text[]) AS t(id, name)
                    WHERE o.id = t.id AND o.state = 'leased' AND o.lease_owner = \(owner)
                    RETURNING 1
                    """)
            }
            if !retries.ids.isEmpty {
                applied += try await connection.changed(
                    """
                    UPDATE digest_outbox o
                    SET state = CASE WHEN o.attempts >= \(maxAttempts) THEN 'dead' ELSE 'ready' END,
                        available_at = CASE WHEN o.attempts >= \(maxAttempts) THEN o.available_at ELSE to_timestamp(t.at) END,
                        last_error = CASE WHEN o.attempts >= \(maxAttempts)
                            THEN t.error || ' (gave up after ' || o.attempts || ' attempts)' ELSE t.error END,
                        settled_at = CASE WHEN o.attempts >= \(maxAttempts) THEN to_timestamp(\(now)) END,
                        lease_owner = NULL, leased_until = NULL
                    FROM unnest(\(retries.ids)::int8[], \(retries.at)::int8[], \(retries.errors)::text[]) AS t(id, at, error)
                    WHERE o.id = t.id AND o.state = 'leased' AND o.lease_owner = \(owner)
                    RETURNING 1
                    """)
            }
            if !dead.ids.isEmpty {
                // An unregistered token is remembered by token beside the adopter's devices (which may
                // be a read-only view; the history reader leaves these tokens out until one is
                // registered after its death), in the statement that settles its row and only for a
                // row it settled: a row a forget deleted, or whose lease was lost, leaves no entry, and
                // a forget waiting on the row's lock sees the entry once this commits.
                applied += try await connection.changed(
                    """
                    WITH settled AS (
                        UPDATE digest_outbox o SET state = 'dead', last_error = t.reason, settled_at = to_timestamp(\(now)),
                            lease_owner = NULL, leased_until = NULL
                        FROM unnest(\(dead.ids)::int8[], \(dead.reasons)::text[]) AS t(id, reason)
                        WHERE o.id = t.id AND o.state = 'leased' AND o.lease_owner = \(owner)
                        RETURNING o.id, o.target, t.reason),
                    remembered AS (
                        INSERT INTO digest_dead_tokens (token, died_at, reason)
                        SELECT DISTINCT ON (s.target) s.target, to_timestamp(u.died_at), s.reason
                        FROM settled s JOIN unnest(\(unregistered.ids)::int8[], \(unregistered.diedAt)::int8[]) AS u(id, died_at) ON u.id = s.id
                        WHERE s.target <> ''
                        ORDER BY s.target, u.died_at DESC
                        ON CONFLICT (token) DO UPDATE SET died_at = excluded.died_at, reason = excluded.reason)
                    SELECT 1 FROM settled
                    """)
            }
            if !released.isEmpty {
                applied += try await connection.changed(
                    """
                    UPDATE digest_outbox
                    SET state = 'ready', attempts = greatest(attempts - 1, 0), lease_owner = NULL, leased_until = NULL
                    WHERE id = ANY(\(released)) AND state = 'leased' AND lease_owner = \(owner)
                    RETURNING 1
                    """)
            }
            if !postponed.ids.isEmpty {
                // 0 and '' stand for "as it was" (the arrays carry no NULLs).
                applied += try await connection.changed(
                    """
                    UPDATE digest_outbox o
                    SET state = 'ready', attempts = greatest(o.attempts - 1, 0), lease_owner = NULL, leased_until = NULL,
                        available_at = CASE WHEN t.until > 0 THEN to_timestamp(t.until) ELSE o.available_at END,
                        last_error = CASE WHEN t.reason <> '' THEN t.reason ELSE o.last_error END
                    FROM unnest(\(postponed.ids)::int8[], \(postponed.until)::int8[], \(postponed.reasons)::text[]) AS t(id, until, reason)
                    WHERE o.id = t.id AND o.state = 'leased' AND o.lease_owner = \(owner)
                    RETURNING 1
                    """)
            }
            return applied
        }
    }

    @discardableResult
    public func extendLeases(ids: [Int64], owner: String, until: Int64) async throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let rows = try await pool.rows(
            """
            UPDATE digest_outbox SET leased_until = to_timestamp(\(until))
            WHERE id = ANY(\(ids)) AND state = 'leased' AND lease_owner = \(owner)
            RETURNING id
            """)
        return Set(try rows.map { try $0.decode(Int64.self) })
    }

    public func requeueDead(reasonPrefix: String?, week: String?, now: Int64) async throws -> Int {
        let rows = try await pool.rows(
            """
            WITH requeued AS (
                UPDATE digest_outbox
                SET state = 'ready', attempts = 0, available_at = to_timestamp(\(now)), settled_at = NULL,
                    lease_owner = NULL, leased_until = NULL
                WHERE state = 'dead'
                  AND (\(reasonPrefix)::text IS NULL OR starts_with(last_error, \(reasonPrefix)))
                  AND (\(week)::text IS NULL OR week = \(week))
                RETURNING 1)
            SELECT count(*) FROM requeued
            """)
        return try rows.first?.decode(Int.self) ?? 0
    }

    public func peekDue(afterID: Int64, limit: Int, now: Int64, providers: Set<Provider>) async throws -> [LeasedMessage] {
        let names = providers.map(\.rawValue)
        return try Self.messages(
            await pool.rows(
                """
                SELECT id, dedupe_key, user_id, platform, message::text, attempts, provider, target, headers::text FROM digest_outbox
                WHERE id > \(afterID) AND state = 'ready' AND available_at <= to_timestamp(\(now)) AND provider = ANY(\(names)::text[])
                ORDER BY id LIMIT \(limit)
                """))
    }

    public func backlog(now: Int64, providers: Set<Provider>?) async throws -> OutboxBacklog {
        try await pool.transaction { try await Self.settleWindows($0, now: now) }
        // Every provider's: as before providers were (no provider column read). Some: the same
        // counts, each reading the rows it finds for their provider.
        var binds = PostgresBindings()
        binds.append(now)
        var filter = ""
        if let providers {
            binds.append(providers.map(\.rawValue).sorted())
            filter = " AND provider = ANY($2::text[])"
        }
        guard
            let row = try await pool.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT
                            (SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= to_timestamp($1)\(filter)),
                            (SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at > to_timestamp($1) AND attempts > 0\(filter)),
                            (SELECT count(*) FROM digest_outbox WHERE state = 'leased'\(filter)),
                            (SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at > to_timestamp($1) AND attempts = 0\(filter)),
                            (SELECT extract(epoch FROM min(available_at))::int8 FROM digest_outbox
                             WHERE state = 'ready' AND available_at > to_timestamp($1)\(filter))
                        """, binds: binds)
            ).first
        else { return OutboxBacklog() }
        let (due, retrying, leased, waiting, next) = try row.decode((Int, Int, Int, Int, Int64?).self)
        return OutboxBacklog(due: due, retrying: retrying, leased: leased, waiting: waiting, nextDue: next)
    }

    /// Expires ready messages past their TTL and holds those whose window ended (the reader's quiet
    /// hours began) until the next one, as the SQLite consumer does (docs/003).
    static func settleWindows(_ connection: PostgresConnection, now: Int64) async throws {
        try await connection.run(
            """
            WITH ended AS (
                SELECT id FROM digest_outbox WHERE state = 'ready' AND expires_at <= to_timestamp(\(now))
                FOR UPDATE SKIP LOCKED)
            UPDATE digest_outbox o
            SET state = 'expired', settled_at = to_timestamp(\(now)),
                last_error = 'EXPIRED: not sent before its TTL ended at ' || to_char(o.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            FROM ended WHERE o.id = ended.id
            """)
        try await connection.run(
            """
            WITH held AS (
                SELECT id, floor(extract(epoch FROM to_timestamp(\(now)) - window_end) / 86400)::int8 AS days
                FROM digest_outbox WHERE state = 'ready' AND window_end <= to_timestamp(\(now))
                FOR UPDATE SKIP LOCKED)
            UPDATE digest_outbox o
            SET available_at = greatest(o.available_at, o.quiet_until + interval '1 second' * (86400 * held.days)),
                window_end = o.window_end + interval '1 second' * (86400 * (held.days + 1)),
                quiet_until = o.quiet_until + interval '1 second' * (86400 * (held.days + 1))
            FROM held WHERE o.id = held.id
            """)
    }

    static func messages(_ rows: [PostgresRow]) throws -> [LeasedMessage] {
        var messages: [LeasedMessage] = []
        messages.reserveCapacity(rows.count)
        for row in rows {
            let (id, key, user, platform, message, attempts, provider, target, headers) =
                try row.decode((Int64, String, String, String, String, Int, String, String, String?).self)
            messages.append(
                LeasedMessage(
                    id: id, dedupeKey: key, userID: user, platform: platform, message: message, attempts: attempts,
                    provider: try OutboxRow.column(provider, "provider", row: id), target: target, headers: headers))
        }
        return messages
    }
}
