public import DigestCore
public import DigestStore
import PostgresNIO

/// PostgreSQL as the store: history read through the `digest_*` views, the outbox, and a run table
/// that lets any number of `digest run` processes on any number of machines share one week.
///
/// Every call is async and talks to the server through PostgresNIO's async API. The database owns
/// its connections for its lifetime (``PostgresClients``): a pool of at most `connections` that every
/// part shares (the history reader, the ledger, the outbox consumer, the import and event sinks, the
/// operator views), each unit of work (a statement or a transaction) on a connection borrowed for its
/// whole duration, and one connection of the chunk-lease renewer's own. The first call also checks
/// the schema (once, not per call).
///
/// The database is a `Service`, run by its owner as postgres-nio's clients are: ``run()`` in a
/// `ServiceGroup`, or ``withRunning(isolation:_:)`` for the length of a body. A call made while nothing runs it
/// waits up to 5 s for ``run()``, then fails with a ``PostgresStoreError`` saying that the database
/// is not running; once the run has ended (cancelled, shut down, or ``close()``), calls fail saying
/// that it is closed.
///
/// ```swift
/// let database = try PostgresDatabase.postgres(url: "postgres://digest@db.internal/digest")
/// let stats = try await database.withRunning { try await database.outboxStats(now: 0) }
/// ```
public struct PostgresDatabase: DigestDatabase {
    public let location: PostgresLocation
    /// How this process takes part in a shared run.
    public let coordination: PostgresRunCoordination
    let clients: PostgresClients

    /// Connections at most in the pool when none is given: enough for a run's reader and ledger (and
    /// a zone cursor's or an operator view's statement beside them), or a sender's store operation
    /// beside the operator's views, few enough that many workers fit within the server's
    /// `max_connections` (100 by default). The lease renewer's connection is one more.
    public static let defaultConnections = 4

    /// A database at `location`; `connections` bounds the pool its parts share (`--db-connections`).
    public init(location: PostgresLocation, run: PostgresRunCoordination.Settings = .init(), connections: Int = Self.defaultConnections) {
        self.location = location
        let clients = PostgresClients(location: location, size: connections)
        self.clients = clients
        self.coordination = PostgresRunCoordination(clients: clients, settings: run)
    }

    /// Connections at most in the pool the database's parts share.
    public var connections: Int { clients.size }

    /// Ends the database's run and waits until its connections are closed; later calls fail, and so
    /// does a later ``run()``. Closing twice is closing once. Call it once the database's work is
    /// done: a unit of work still running then fails.
    public func close() async {
        await clients.close()
    }

    /// Units of work on the shared pool of a database whose schema is current (or fails with what to
    /// run). The schema version is read when the database opens; it is read again only while it is
    /// not current (a migration may have run since).
    func pool(reconnectWindow: Duration? = nil, checkingSchema: Bool = true) async throws -> PostgresPool {
        let pool = PostgresPool(
            clients: clients, lane: .shared, reconnectWindow: reconnectWindow ?? coordination.settings.reconnectWindow)
        _ = try await clients.client(.shared)
        if checkingSchema && clients.schemaVersion != PostgresSchema.migrations.count {
            clients.setSchemaVersion(try await pool.perform { try await PostgresSchema.version($0) })
            try PostgresSchema.requireCurrent(clients.schemaVersion, location: location)
        }
        return pool
    }

    /// Runs `body` with the shared pool of a database whose schema is current.
    func withPool<T>(reconnectWindow: Duration? = nil, _ body: (PostgresPool) async throws -> T) async throws -> T {
        try await body(try await pool(reconnectWindow: reconnectWindow))
    }

    public func migrate() async throws -> (from: Int, to: Int) {
        let versions = try await PostgresSchema.migrate(try await pool(reconnectWindow: .seconds(60), checkingSchema: false))
        clients.setSchemaVersion(versions.to)
        return versions
    }

    /// Runs `body` with a reader whose batches are chunks claimed from the week's shared run; once
    /// the reader is closed, the leases of any chunk it still holds are no longer renewed.
    public func withHistoryReader<T>(_ body: (PostgresHistoryReader) async throws -> T) async throws -> T {
        try await withPool { pool in
            coordination.readerOpened()
            let value: T
            do {
                value = try await body(PostgresHistoryReader(pool: pool, coordination: coordination))
            } catch {
                await coordination.readerClosed()
                throw error
            }
            await coordination.readerClosed()
            return value
        }
    }

    public func withLedger<T>(_ body: (PostgresRunLedger) async throws -> T) async throws -> T {
        try await withPool { pool in
            try await body(PostgresRunLedger(pool: pool, coordination: coordination))
        }
    }

    public func withOutboxConsumer<T>(_ body: (PostgresOutboxConsumer) async throws -> T) async throws -> T {
        try await withPool { pool in
            try await body(PostgresOutboxConsumer(pool: pool))
        }
    }

    /// Runs `body` with an import sink whose lost connection fails the import instead of being
    /// retried (its batches run on the shared pool, like every other part).
    public func withImportSink<T>(_ body: (PostgresImportSink) async throws -> T) async throws -> T {
        try await withPool(reconnectWindow: .zero) { pool in
            try await body(PostgresImportSink(pool: pool))
        }
    }

    /// No file lock: processes coordinate through the run table's chunk leases.
    public func acquireRunLock() async throws -> RunLock? { nil }

    /// Rolling runs walk zone chunks planned over `digest_users.seq` (docs/005).
    /// Per zone of `digest_users`: the users of the week's done zone chunks, and those still waiting
    /// (in open chunks, or past the zone's plan: all of them before the zone's week has ended).
    public func zoneProgress(week: ISOWeek) async throws -> [ZoneProgress] {
        let name = week.description
        let rows: [(String, Int, Int)] = try await withPool { pool in
            try await PostgresRollingPlan.requireSeq(pool)
            // A week no rolling run has planned (a --week run's) has no zone lines.
            guard try await !pool.rows("SELECT 1 FROM digest_zone_runs WHERE week = \(name) LIMIT 1").isEmpty else { return [] }
            return try await pool.rows(
                """
                WITH plans AS (SELECT time_zone, planned FROM digest_zone_runs WHERE week = \(name)),
                chunks AS (
                    SELECT time_zone, sum(users) FILTER (WHERE state = 'done') AS done, sum(users) FILTER (WHERE state <> 'done') AS open
                    FROM digest_run_chunks WHERE week = \(name) AND time_zone IS NOT NULL GROUP BY time_zone)
                SELECT u.time_zone, coalesce(max(c.done), 0)::int8,
                       (count(*) FILTER (WHERE u.seq > coalesce(p.planned, 0)) + coalesce(max(c.open), 0))::int8
                FROM digest_users u LEFT JOIN plans p ON p.time_zone = u.time_zone LEFT JOIN chunks c ON c.time_zone = u.time_zone
                GROUP BY u.time_zone
                """
            ).map { try $0.decode((String, Int, Int).self) }
        }
        let calendar = WeekCalendar(week: week)
        return rows.map {
            ZoneProgress(week: name, zone: $0.0, offset: calendar.utcOffset(forZone: $0.0), done: $0.1, waiting: $0.2)
        }
    }

    public func outboxStats(now: Int64) async throws -> OutboxStats {
        try await withPool { pool in
            var stats = OutboxStats()
            let groups: [(String, WritableKeyPath<OutboxStats, [String: Int]>)] = [
                ("state", \.byState), ("platform", \.byPlatform), ("variant", \.byVariant), ("week", \.byWeek),
                ("provider", \.byProvider),
            ]
            for (column, keyPath) in groups {
                let rows = try await pool.rows(
                    PostgresQuery(unsafeSQL: "SELECT \(column), count(*) FROM digest_outbox GROUP BY \(column)"))
                for row in rows {
                    let (key, count) = try row.decode((String, Int).self)
                    stats[keyPath: keyPath][key] = count
                    if column == "state" { stats.total += count }
                }
            }
            stats.due = try await pool.rows(
                "SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= to_timestamp(\(now))"
            ).first?.decode(Int.self) ?? 0
            return stats
        }
    }

    public func peek(limit: Int, state: OutboxDelivery.State?) async throws -> [OutboxRow] {
        let state = state?.rawValue
        return try await withPool { pool in
            try Self.rows(
                await pool.rows(
                    "SELECT \(unescaped: Self.rowColumns) FROM digest_outbox WHERE (\(state)::text IS NULL OR state = \(state)) ORDER BY id LIMIT \(limit)"))
        }
    }

    public func outboxRows(week: String, userID: String) async throws -> [OutboxRow] {
        try await withPool { pool in
            try Self.rows(
                await pool.rows(
                    "SELECT \(unescaped: Self.rowColumns) FROM digest_outbox WHERE user_id = \(userID) AND week = \(week) ORDER BY id"))
        }
    }

    public func recordTestSend(_ send: TestSend, now: Int64, perMinute: Int) async throws -> Bool {
        try await withPool { pool in
            try await pool.transaction { connection in
                // One device's sends counted and added by one process at a time.
                try await connection.run("SELECT pg_advisory_xact_lock(hashtext('digest_test_sends:' || \(send.device)))")
                let count = try await connection.rows(
                    "SELECT count(*)::int8 FROM digest_test_sends WHERE device = \(send.device) AND sent_at > to_timestamp(\(now - 60))")
                guard let first = count.first, try first.decode(Int.self) < perMinute else { return false }
                try await connection.run(
                    """
                    INSERT INTO digest_test_sends (message_id, sent_at, device, user_id, week, provider, platform, variant)
                    VALUES (\(send.messageID), to_timestamp(\(now)), \(send.device), \(send.userID), \(send.week), \(send.provider.rawValue),
                            \(send.platform), \(send.variant))
                    """)
                return true
            }
        }
    }

    public func reviveToken(_ token: String) async throws -> Bool {
        try await withPool { pool in
            try await !pool.rows("DELETE FROM digest_dead_tokens WHERE token = \(token) RETURNING 1").isEmpty
        }
    }

    public func outboxWeeks(userID: String) async throws -> [String] {
        try await withPool { pool in
            let rows = try await pool.rows(
                "SELECT DISTINCT week FROM digest_outbox WHERE user_id = \(userID) ORDER BY week DESC LIMIT 60")
            var weeks: [String] = []
            for row in rows { weeks.append(try row.decode(String.self)) }
            return weeks
        }
    }

    /// Where each week's shared run stands, with its chunks. The run row keeps no counters (each
    /// done chunk keeps its own), so `counters` is empty.
    public func runStatus(week: ISOWeek?) async throws -> [RunStatus] {
        try await withPool { pool in
            let rows = try await pool.rows(
                """
                SELECT r.week, r.state, r.chunks, r.users, extract(epoch FROM r.started_at)::bigint,
                       count(*) FILTER (WHERE c.state = 'done'),
                       count(*) FILTER (WHERE c.state = 'claimed' AND c.leased_until > now()),
                       count(*) FILTER (WHERE c.state = 'claimed' AND c.leased_until <= now()),
                       count(DISTINCT c.lease_owner) FILTER (WHERE c.state = 'claimed' AND c.leased_until > now()),
                       coalesce(sum(c.claims), 0)
                FROM digest_runs r LEFT JOIN digest_run_chunks c ON c.week = r.week
                WHERE (\(week?.description)::text IS NULL OR r.week = \(week?.description))
                GROUP BY r.week ORDER BY r.week DESC LIMIT 20
                """)
            var runs: [RunStatus] = []
            for row in rows {
                let (week, state, chunks, users, started, done, claimed, expired, workers, claims) =
                    try row.decode((String, String, Int, Int, Int64, Int, Int, Int, Int, Int).self)
                runs.append(
                    RunStatus(
                        week: week, state: state, users: users, startedAt: started, counters: RunCounters(),
                        chunks: RunStatus.Chunks(
                            total: chunks, done: done, claimed: claimed, expired: expired, workers: workers, claims: claims)))
            }
            return runs
        }
    }

    static let rowColumns = """
        id, dedupe_key, week, user_id, platform, variant, message::text, report::text,
        extract(epoch FROM available_at)::bigint, state, attempts, last_error, message_id, locale, provider, target, headers::text,
        timing, due_local
        """

    static func rows(_ rows: [PostgresRow]) throws -> [OutboxRow] {
        var result: [OutboxRow] = []
        result.reserveCapacity(rows.count)
        for row in rows {
            let (id, key, week, user, platform, variant, message, report, available, state, attempts, error, messageID, locale,
                 provider, target, headers, timing, dueLocal) =
                try row.decode(
                    (Int64, String, String, String, String, String, String, String, Int64, String, Int, String?, String?, String?,
                     String, String, String?, String?, String?).self)
            var outboxRow =
                OutboxRow(
                    id: id, dedupeKey: key, week: week, userID: user, platform: try OutboxRow.column(platform, "platform", row: id),
                    variant: try OutboxRow.column(variant, "variant", row: id), message: message, report: report,
                    availableAt: available, state: try OutboxRow.column(state, "state", row: id), attempts: attempts,
                    lastError: error, messageID: messageID, locale: locale,
                    provider: try OutboxRow.column(provider, "provider", row: id), target: target, headers: headers)
            outboxRow.timing = timing.flatMap(DeliveryTiming.init(rawValue:))
            outboxRow.dueLocal = dueLocal
            result.append(outboxRow)
        }
        return result
    }
}

extension DigestPipelineStore where Self == PostgresDatabase {
    /// The PostgreSQL database at `url` (`postgres://…`).
    public static func postgres(
        url: String, run: PostgresRunCoordination.Settings = .init(), connections: Int = PostgresDatabase.defaultConnections
    ) throws -> PostgresDatabase {
        PostgresDatabase(location: try PostgresLocation(url: url), run: run, connections: connections)
    }
}
