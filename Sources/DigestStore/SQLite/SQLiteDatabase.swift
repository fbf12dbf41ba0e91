import DigestCore
import Foundation

/// The embedded store: one SQLite file (WAL mode) holding history, outbox and run bookkeeping.
public struct SQLiteDatabase: DigestDatabase {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Opens a connection, creating and migrating the schema on first use of a new file.
    public func connect() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        let version = try SQLiteSchema.version(connectionAfterEnsuringTable: connection)
        if version < SQLiteSchema.migrations.count { _ = try SQLiteSchema.migrate(connection) }
        return connection
    }

    public func migrate() throws -> (from: Int, to: Int) {
        try SQLiteSchema.migrate(SQLiteConnection(path: path))
    }

    public func makeHistoryReader() throws -> SQLiteHistoryReader {
        SQLiteHistoryReader(connection: try connect())
    }

    public func makeLedger() throws -> SQLiteRunLedger {
        SQLiteRunLedger(connection: try connect())
    }

    public func makeOutboxConsumer() throws -> SQLiteOutboxConsumer {
        SQLiteOutboxConsumer(connection: try connect())
    }

    public func acquireRunLock() throws -> RunLock? {
        try RunLock(path: path + ".lock")
    }

    public func outboxStats() throws -> OutboxStats {
        let connection = try connect()
        var stats = OutboxStats()
        let groups: [(String, WritableKeyPath<OutboxStats, [String: Int]>)] = [
            ("state", \.byState), ("platform", \.byPlatform), ("variant", \.byVariant), ("week", \.byWeek),
        ]
        for (column, keyPath) in groups {
            let statement = try connection.statement("SELECT \(column), count(*) FROM digest_outbox GROUP BY \(column)")
            while try statement.step() {
                stats[keyPath: keyPath][statement.string(0)] = statement.int(1)
                if column == "state" { stats.total += statement.int(1) }
            }
        }
        let due = try connection.statement("SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= ?")
        due.bind(Int64(Date().timeIntervalSince1970), at: 1)
        if try due.step() { stats.due = due.int(0) }
        return stats
    }

    public func peek(limit: Int, state: String?) throws -> [OutboxRow] {
        let connection = try connect()
        let statement = try connection.statement(
            """
            SELECT \(Self.rowColumns) FROM digest_outbox WHERE (?1 IS NULL OR state = ?1) ORDER BY id LIMIT ?2
            """)
        statement.bind(state, at: 1)
        statement.bind(limit, at: 2)
        return try Self.rows(statement)
    }

    public func outboxRows(week: String, userID: String) throws -> [OutboxRow] {
        let connection = try connect()
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

    public func outboxWeeks(userID: String) throws -> [String] {
        let connection = try connect()
        let statement = try connection.statement(
            "SELECT DISTINCT week FROM digest_outbox WHERE user_id = ? ORDER BY week DESC LIMIT 60")
        statement.bind(userID, at: 1)
        var weeks: [String] = []
        while try statement.step() { weeks.append(statement.string(0)) }
        return weeks
    }

    static let rowColumns =
        "id, dedupe_key, week, user_id, platform, variant, message, report, available_at, state, attempts, last_error"

    static func rows(_ statement: SQLiteStatement) throws -> [OutboxRow] {
        var rows: [OutboxRow] = []
        while try statement.step() {
            rows.append(
                OutboxRow(
                    id: statement.int64(0), dedupeKey: statement.string(1), week: statement.string(2),
                    userID: statement.string(3), platform: statement.string(4), variant: statement.string(5),
                    message: statement.string(6), report: statement.string(7), availableAt: statement.int64(8),
                    state: statement.string(9), attempts: statement.int(10), lastError: statement.optionalString(11)))
        }
        return rows
    }
}

extension DigestDatabase where Self == SQLiteDatabase {
    /// The embedded SQLite store at `path`.
    public static func sqlite(path: String) -> SQLiteDatabase { SQLiteDatabase(path: path) }
}

extension SQLiteSchema {
    static func version(connectionAfterEnsuringTable connection: SQLiteConnection) throws -> Int {
        try connection.execute("CREATE TABLE IF NOT EXISTS digest_schema (version INTEGER NOT NULL)")
        return try version(connection)
    }
}
