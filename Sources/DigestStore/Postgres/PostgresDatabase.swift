public import DigestCore
import Foundation
import PostgresNIO

/// PostgreSQL as the store: history read through the `digest_*` views, the outbox, and a run table
/// that lets any number of `digest run` processes on any number of machines share one week.
///
/// Each reading or writing thread gets its own connection. Every call blocks its thread (the run and
/// the sender keep their database work on dedicated threads).
public struct PostgresDatabase: DigestDatabase {
    public let location: PostgresLocation
    /// How this process takes part in a shared run.
    public let coordination: PostgresRunCoordination

    public init(location: PostgresLocation, run: PostgresRunCoordination.Settings = .init()) {
        self.location = location
        self.coordination = PostgresRunCoordination(location: location, settings: run)
    }

    /// Opens a session on a database whose schema is current (or fails with what to run).
    func session() throws -> PostgresSession {
        let session = try PostgresSession(location: location, reconnectWindow: coordination.settings.reconnectWindow)
        try PostgresSchema.requireCurrent(session)
        return session
    }

    public func migrate() throws -> (from: Int, to: Int) {
        try PostgresSchema.migrate(PostgresSession(location: location))
    }

    public func makeHistoryReader() throws -> PostgresHistoryReader {
        PostgresHistoryReader(session: try session(), coordination: coordination)
    }

    public func makeLedger() throws -> PostgresRunLedger {
        PostgresRunLedger(session: try session(), coordination: coordination)
    }

    public func makeOutboxConsumer() throws -> PostgresOutboxConsumer {
        PostgresOutboxConsumer(session: try session())
    }

    /// No file lock: processes coordinate through the run table's chunk leases.
    public func acquireRunLock() throws -> RunLock? { nil }

    public func outboxStats() throws -> OutboxStats {
        let session = try session()
        var stats = OutboxStats()
        let groups: [(String, WritableKeyPath<OutboxStats, [String: Int]>)] = [
            ("state", \.byState), ("platform", \.byPlatform), ("variant", \.byVariant), ("week", \.byWeek),
        ]
        for (column, keyPath) in groups {
            for row in try session.rows(PostgresQuery(unsafeSQL: "SELECT \(column), count(*) FROM digest_outbox GROUP BY \(column)")) {
                let (key, count) = try row.decode((String, Int).self)
                stats[keyPath: keyPath][key] = count
                if column == "state" { stats.total += count }
            }
        }
        stats.due = try session.rows("SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= now()")
            .first?.decode(Int.self) ?? 0
        return stats
    }

    public func peek(limit: Int, state: String?) throws -> [OutboxRow] {
        try Self.rows(
            try session().rows(
                "SELECT \(unescaped: Self.rowColumns) FROM digest_outbox WHERE (\(state)::text IS NULL OR state = \(state)) ORDER BY id LIMIT \(limit)"))
    }

    public func outboxRows(week: String, userID: String) throws -> [OutboxRow] {
        try Self.rows(
            try session().rows(
                "SELECT \(unescaped: Self.rowColumns) FROM digest_outbox WHERE user_id = \(userID) AND week = \(week) ORDER BY id"))
    }

    public func outboxWeeks(userID: String) throws -> [String] {
        try session().rows("SELECT DISTINCT week FROM digest_outbox WHERE user_id = \(userID) ORDER BY week DESC LIMIT 60")
            .map { try $0.decode(String.self) }
    }

    /// Where each week's shared run stands.
    public func runStatus(week: ISOWeek?) throws -> [PostgresRunStatus] {
        let session = try session()
        let rows = try session.rows(
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
        return try rows.map { row in
            let (week, state, chunks, users, started, done, claimed, expired, workers, claims) =
                try row.decode((String, String, Int, Int, Int64, Int, Int, Int, Int, Int).self)
            return PostgresRunStatus(
                week: week, state: state, chunks: chunks, users: users, startedAt: started, done: done,
                claimed: claimed, expired: expired, workers: workers, claims: claims)
        }
    }

    static let rowColumns = """
        id, dedupe_key, week, user_id, platform, variant, message::text, report::text,
        extract(epoch FROM available_at)::bigint, state, attempts, last_error
        """

    static func rows(_ rows: [PostgresRow]) throws -> [OutboxRow] {
        try rows.map { row in
            let (id, key, week, user, platform, variant, message, report, available, state, attempts, error) =
                try row.decode((Int64, String, String, String, String, String, String, String, Int64, String, Int, String?).self)
            return OutboxRow(
                id: id, dedupeKey: key, week: week, userID: user, platform: platform, variant: variant, message: message,
                report: report, availableAt: available, state: state, attempts: attempts, lastError: error)
        }
    }
}

extension DigestDatabase where Self == PostgresDatabase {
    /// The PostgreSQL database at `url` (`postgres://…`).
    public static func postgres(url: String, run: PostgresRunCoordination.Settings = .init()) throws -> PostgresDatabase {
        PostgresDatabase(location: try PostgresLocation(url: url), run: run)
    }
}

/// A week's shared run, as `digest run --status` shows it.
public struct PostgresRunStatus: Sendable, Codable, Hashable {
    public var week: String
    /// `running` or `done`.
    public var state: String
    public var chunks: Int
    /// Users when the run was split.
    public var users: Int
    public var startedAt: Int64
    /// Chunks whose messages are in the outbox.
    public var done: Int
    /// Chunks a live worker holds.
    public var claimed: Int
    /// Chunks whose worker stopped renewing the lease (another will claim them).
    public var expired: Int
    /// Workers holding chunks now.
    public var workers: Int
    /// Claims so far (more than `chunks` when chunks were redone after a worker died).
    public var claims: Int

    /// Chunks nobody has finished or holds.
    public var left: Int { chunks - done - claimed }
}
