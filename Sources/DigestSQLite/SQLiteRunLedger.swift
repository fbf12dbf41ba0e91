public import DigestCore
public import DigestStore
import DigestThreads

/// ``RunLedger`` on SQLite: `digest_outbox` and `digest_runs` in one database, written on a thread
/// of its own where the ledger's connection lives; a batch's messages and cursor commit in one
/// transaction.
public final class SQLiteRunLedger: RunLedger {
    let thread: DedicatedThread<SQLiteLedgerQueries>

    init(thread: DedicatedThread<SQLiteLedgerQueries>) {
        self.thread = thread
    }

    public func begin(week: ISOWeek, now: Int64) async throws -> RunCheckpoint {
        try await thread.run { try $0.begin(week: week, now: now) }
    }

    public func commit(
        week: ISOWeek, through key: Int64, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int {
        try await thread.run { try $0.commit(week: week, through: key, messages: messages, counters: counters, now: now) }
    }

    public func zoneCursors(week: ISOWeek, zones: [String], endsAt: [Int64], now: Int64) async throws -> [ZoneCursor] {
        try await thread.run { try $0.zoneCursors(week: week, zones: zones, endsAt: endsAt, now: now) }
    }

    public func commit(
        week: ISOWeek, zones: [ZoneCursor], users: Int, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int {
        try await thread.run {
            try $0.commit(week: week, zones: zones, users: users, messages: messages, counters: counters, now: now)
        }
    }

    public func resumeWeek() async throws -> ISOWeek? {
        try await thread.run { try $0.resumeWeek() }
    }

    public func finishRolling(week: ISOWeek, complete: Bool, now: Int64) async throws -> RunCounters {
        try await thread.run { try $0.finishRolling(week: week, complete: complete, now: now) }
    }

    public func maintain() async throws {
        try await thread.run { try $0.maintain() }
    }

    public func finish(week: ISOWeek, now: Int64) async throws -> RunCounters {
        try await thread.run { try $0.finish(week: week, now: now) }
    }
}
