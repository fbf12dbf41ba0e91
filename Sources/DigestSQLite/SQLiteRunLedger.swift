public import DigestCore
public import DigestStore

/// ``RunLedger`` on SQLite: `digest_outbox` and `digest_runs` in one database, written on the store's
/// writer connection (its thread keeps the ledger's totals for the scope); a batch's messages and
/// cursor commit in one transaction.
public final class SQLiteRunLedger: RunLedger {
    let scope: SQLiteWriterScope<SQLiteLedgerQueries>

    init(scope: SQLiteWriterScope<SQLiteLedgerQueries>) {
        self.scope = scope
    }

    public func begin(week: ISOWeek, now: Int64) async throws -> RunCheckpoint {
        try await scope.run { try $0.begin(week: week, now: now) }
    }

    public func commit(
        week: ISOWeek, through key: Int64, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int {
        try await scope.run { try $0.commit(week: week, through: key, messages: messages, counters: counters, now: now) }
    }

    public func zoneCursors(week: ISOWeek, zones: [String], endsAt: [Int64], now: Int64) async throws -> [ZoneCursor] {
        try await scope.run { try $0.zoneCursors(week: week, zones: zones, endsAt: endsAt, now: now) }
    }

    public func commit(
        week: ISOWeek, zones: [ZoneCursor], users: Int, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int {
        try await scope.run {
            try $0.commit(week: week, zones: zones, users: users, messages: messages, counters: counters, now: now)
        }
    }

    public func resumeWeek() async throws -> ISOWeek? {
        try await scope.run { try $0.resumeWeek() }
    }

    public func finishRolling(week: ISOWeek, complete: Bool, now: Int64) async throws -> RunCounters {
        try await scope.run { try $0.finishRolling(week: week, complete: complete, now: now) }
    }

    public func maintain() async throws {
        try await scope.run { try $0.maintain() }
    }

    public func finish(week: ISOWeek, now: Int64) async throws -> RunCounters {
        try await scope.run { try $0.finish(week: week, now: now) }
    }
}
