public import DigestCore
public import DigestStore
import DigestThreads
import Foundation
import Synchronization

/// The embedded store: one SQLite file (WAL mode) holding history, outbox and run bookkeeping.
///
/// A store opens its connections once, at its first call, and keeps them until ``close()`` (or until
/// it is released): one writer and `readers` readers (default 2), each on a thread of its own, that
/// every call borrows (``SQLitePool``). Opening creates a new file's schema, or migrates an older
/// one, and checks it once. A call waiting for a connection that is lent ends with
/// `CancellationError` when its task is cancelled.
public final class SQLiteDatabase: DigestDatabase {
    public let path: String
    /// Reader connections kept open beside the writer.
    package let readers: Int
    private let pool = Mutex<Task<SQLitePool, any Error>?>(nil)

    /// The readers when none are asked for (the initializer's default): one per core of a small
    /// machine; the run reads on one, the previews and the operator's views on the others.
    package static let defaultReaders = 2

    public init(path: String, readers: Int = 2) {
        self.path = path
        self.readers = max(1, readers)
    }

    deinit {
        // The pool's threads stop once their jobs are done, and close their connections there.
        pool.withLock { $0?.cancel() }
    }

    /// The open pool, opened by the first call (a failed opening is tried again by the next call).
    func opened() async throws -> SQLitePool {
        let (path, readers) = (path, readers)
        let task = pool.withLock { pool in
            if let pool { return pool }
            let task = Task { try await SQLitePool.open(path: path, readers: readers) }
            pool = task
            return task
        }
        do {
            return try await task.value
        } catch {
            pool.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    /// Closes the connections, once the calls already given are done; a later call opens them again.
    public func close() async {
        guard let task = pool.withLock({ pool in defer { pool = nil }; return pool }) else { return }
        if let opened = try? await task.value { await opened.shutdown() }
    }

    /// Opens a connection of the caller's own, outside the store's pool, creating and migrating the
    /// schema of a new file. Blocks: for tools and tests that work on the file directly.
    public func connect() throws -> SQLiteConnection {
        try SQLiteSchema.open(path).connection
    }

    /// Runs `body` on the store's writer connection, between the other writes.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await opened().write { try body($0.connection) }
    }

    /// Runs `body` on one of the store's reader connections.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await opened().read(body)
    }

    public func migrate() async throws -> (from: Int, to: Int) {
        try await opened().migrate()
    }

    /// A reader connection is this reader's until `body` returns (shared with the readers and
    /// questions nested in its task), its article caches with it.
    public func withHistoryReader<T>(_ body: (SQLiteHistoryReader) async throws -> T) async throws -> T {
        let pool = try await opened()
        let scope = pool.newScope()
        return try await pool.withReader(scope: scope) { try await body(SQLiteHistoryReader(thread: $0, scope: scope)) }
    }

    public func withLedger<T>(_ body: (SQLiteRunLedger) async throws -> T) async throws -> T {
        try await SQLiteWriterScope.with(pool: opened(), make: SQLiteLedgerQueries.init(connection:)) { try await body(SQLiteRunLedger(scope: $0)) }
    }

    public func withOutboxConsumer<T>(_ body: (SQLiteOutboxConsumer) async throws -> T) async throws -> T {
        try await SQLiteWriterScope.with(pool: opened(), make: SQLiteOutboxQueries.init(connection:)) { try await body(SQLiteOutboxConsumer(scope: $0)) }
    }

    public func withImportSink<T>(_ body: (SQLiteImportSink) async throws -> T) async throws -> T {
        try await SQLiteWriterScope.with(pool: opened(), make: SQLiteImportQueries.init(connection:)) { try await body(SQLiteImportSink(scope: $0)) }
    }

    public func acquireRunLock() async throws -> RunLock? {
        try RunLock(path: path + ".lock")
    }

    /// Every zone's users (one pass over the index on zone), with the week's cursor and count.
    public func zoneProgress(week: ISOWeek) async throws -> [ZoneProgress] {
        let rows: [(String, Int, Int)] = try await read { connection in
            let statement = try connection.statement(
                """
                SELECT u.time_zone, coalesce(z.users, 0), sum(u.seq > coalesce(z.cursor, 0))
                FROM users u LEFT JOIN digest_zone_runs z ON z.week = ?1 AND z.time_zone = u.time_zone
                GROUP BY u.time_zone
                """)
            statement.bind(week.description, at: 1)
            // A week no rolling run has walked (a --week run's) has no zone lines.
            let walked = try connection.statement("SELECT 1 FROM digest_zone_runs WHERE week = ? LIMIT 1")
            walked.bind(week.description, at: 1)
            guard try walked.step() else { return [] }
            walked.reset()
            var rows: [(String, Int, Int)] = []
            while try statement.step() { rows.append((statement.string(0), statement.int(1), statement.int(2))) }
            return rows
        }
        let calendar = WeekCalendar(week: week)
        return rows.map { ZoneProgress(week: week.description, zone: $0.0, offset: calendar.utcOffset(forZone: $0.0), done: $0.1, waiting: $0.2) }
    }

    public func runStatus(week: ISOWeek?) async throws -> [RunStatus] {
        try await read { connection in
            let statement = try connection.statement(
                """
                SELECT week, state, started_at, counters FROM digest_runs WHERE (?1 IS NULL OR week = ?1)
                ORDER BY week DESC LIMIT 20
                """)
            statement.bind(week?.description, at: 1)
            var runs: [RunStatus] = []
            while try statement.step() {
                let counters = (try? JSONDecoder().decode(RunCounters.self, from: Data(statement.string(3).utf8))) ?? RunCounters()
                runs.append(
                    RunStatus(
                        week: statement.string(0), state: statement.string(1), users: counters.users,
                        startedAt: statement.int64(2), counters: counters, chunks: nil))
            }
            return runs
        }
    }

    public func outboxStats(now: Int64) async throws -> OutboxStats {
        try await read { connection in
            var stats = OutboxStats()
            let groups: [(String, WritableKeyPath<OutboxStats, [String: Int]>)] = [
                ("state", \.byState), ("platform", \.byPlatform), ("variant", \.byVariant), ("week", \.byWeek),
                ("provider", \.byProvider),
            ]
            for (column, keyPath) in groups {
                let statement = try connection.statement("SELECT \(column), count(*) FROM digest_outbox GROUP BY \(column)")
                while try statement.step() {
                    stats[keyPath: keyPath][statement.string(0)] = statement.int(1)
                    if column == "state" { stats.total += statement.int(1) }
                }
            }
            let due = try connection.statement("SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= ?")
            due.bind(now, at: 1)
            if try due.step() { stats.due = due.int(0) }
            return stats
        }
    }

    public func peek(limit: Int, state: OutboxDelivery.State?) async throws -> [OutboxRow] {
        try await read { connection in
            let statement = try connection.statement(
                """
                SELECT \(Self.rowColumns) FROM digest_outbox WHERE (?1 IS NULL OR state = ?1) ORDER BY id LIMIT ?2
                """)
            statement.bind(state?.rawValue, at: 1)
            statement.bind(limit, at: 2)
            return try Self.rows(statement)
        }
    }

    public func outboxRows(week: String, userID: String) async throws -> [OutboxRow] {
        try await read { connection in
            // The dedupe key starts with `<week>:<user id>:`, so its unique index finds the rows.
            let statement = try connection.statement(
                """
                SELECT \(Self.rowColumns) FROM digest_outbox
                WHERE dedupe_key >= ?1 AND dedupe_key < ?1 || char(1114111) AND week = ?2 AND user_id = ?3 ORDER BY id
                """)
            statement.bind("\(week):\(userID):", at: 1)
            statement.bind(week, at: 2)
            statement.bind(userID, at: 3)
            return try Self.rows(statement)
        }
    }

    public func recordTestSend(_ send: TestSend, now: Int64, perMinute: Int) async throws -> Bool {
        try await withConnection { connection in
            try connection.transaction {
                let count = try connection.statement("SELECT count(*) FROM digest_test_sends WHERE device = ? AND sent_at > ?")
                count.bind(send.device, at: 1)
                count.bind(now - 60, at: 2)
                guard try count.step(), count.int(0) < perMinute else { return false }
                count.reset()
                let insert = try connection.statement(
                    "INSERT INTO digest_test_sends (message_id, sent_at, device, user_id, week, provider, platform, variant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
                insert.bind([send.messageID, now, send.device, send.userID, send.week, send.provider.rawValue, send.platform, send.variant])
                try insert.run()
                return true
            }
        }
    }

    public func reviveToken(_ token: String) async throws -> Bool {
        try await withConnection { connection in
            let statement = try connection.statement("DELETE FROM digest_dead_tokens WHERE token = ?")
            statement.bind(token, at: 1)
            try statement.run()
            return connection.changes > 0
        }
    }

    public func outboxWeeks(userID: String) async throws -> [String] {
        try await read { connection in
            let statement = try connection.statement(
                "SELECT DISTINCT week FROM digest_outbox WHERE user_id = ? ORDER BY week DESC LIMIT 60")
            statement.bind(userID, at: 1)
            var weeks: [String] = []
            while try statement.step() { weeks.append(statement.string(0)) }
            return weeks
        }
    }

    static let rowColumns =
        "id, dedupe_key, week, user_id, platform, variant, message, report, available_at, state, attempts, last_error, message_id, locale, "
        + "provider, target, headers, timing, due_local"

    static func rows(_ statement: SQLiteStatement) throws -> [OutboxRow] {
        var rows: [OutboxRow] = []
        while try statement.step() {
            let id = statement.int64(0)
            var row =
                OutboxRow(
                    id: id, dedupeKey: statement.string(1), week: statement.string(2), userID: statement.string(3),
                    platform: try OutboxRow.column(statement.string(4), "platform", row: id),
                    variant: try OutboxRow.column(statement.string(5), "variant", row: id),
                    message: statement.string(6), report: statement.string(7), availableAt: statement.int64(8),
                    state: try OutboxRow.column(statement.string(9), "state", row: id), attempts: statement.int(10),
                    lastError: statement.optionalString(11), messageID: statement.optionalString(12),
                    locale: statement.optionalString(13),
                    provider: try OutboxRow.column(statement.string(14), "provider", row: id), target: statement.string(15),
                    headers: statement.optionalString(16))
            row.timing = statement.optionalString(17).flatMap(DeliveryTiming.init(rawValue:))
            row.dueLocal = statement.optionalString(18)
            rows.append(row)
        }
        return rows
    }
}

extension DigestPipelineStore where Self == SQLiteDatabase {
    /// The embedded SQLite store at `path`.
    public static func sqlite(path: String) -> SQLiteDatabase { SQLiteDatabase(path: path) }
}

extension SQLiteSchema {
    /// Opens `path`, creating a new file's schema or migrating an older one; returns the connection
    /// and the versions before and after. Refuses (``SQLiteError/isRefusal``) a database of other
    /// tables than a digest store's, and one whose schema is newer than this digest's.
    static func open(_ path: String) throws -> (connection: SQLiteConnection, migration: (from: Int, to: Int)) {
        let connection = try SQLiteConnection(path: path)
        let tables = try connection.statement(
            "SELECT count(*), count(*) FILTER (WHERE name = 'digest_schema') FROM sqlite_schema WHERE type = 'table'")
        let (count, schema) = try tables.step() ? (tables.int(0), tables.int(1)) : (0, 0)
        tables.reset()
        guard count == 0 || schema == 1 else {
            throw SQLiteError(refusing: "it holds tables but not a digest store's (no digest_schema): not a digest database", path: path)
        }
        try connection.execute("CREATE TABLE IF NOT EXISTS digest_schema (version INTEGER NOT NULL)")
        let version = try version(connection)
        return (connection, version == migrations.count ? (version, version) : try migrate(connection))
    }
}
