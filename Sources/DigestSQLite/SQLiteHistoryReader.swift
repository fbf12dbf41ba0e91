public import DigestCore
public import DigestStore
import DigestThreads

/// ``HistoryReader`` on SQLite: its connection lives on a thread of its own, where each call runs
/// its statements synchronously (batches are key ranges of `users`, in key order).
public final class SQLiteHistoryReader: HistoryReader {
    let thread: DedicatedThread<SQLiteHistoryQueries>

    init(thread: DedicatedThread<SQLiteHistoryQueries>) {
        self.thread = thread
    }

    public func nextBatch(week: ISOWeek, after cursor: Int64, limit: Int) async throws -> UserBatch? {
        try await thread.run { queries in
            let users = try queries.users(after: cursor, limit: limit)
            guard let last = users.last else { return nil }
            return UserBatch(users: users, position: last.key)
        }
    }

    public func timeZones() async throws -> [String] {
        try await thread.run { try $0.timeZones() }
    }

    public func nextBatch(week: ISOWeek, zones: [ZoneCursor], limit: Int) async throws -> ZoneBatch {
        try await thread.run { queries in try queries.readTransaction { try queries.users(zones: zones, limit: limit) } }
    }

    public func countUsers(week: ISOWeek, zones: [ZoneCursor]) async throws -> Int {
        try await thread.run { try $0.countUsers(zones: zones) }
    }

    public func countUsers(week: ISOWeek, after key: Int64) async throws -> Int {
        try await thread.run { try $0.countUsers(after: key) }
    }

    public func reads(of users: [StoredReader], since: [Int64]) async throws -> [[ReadEvent]] {
        try await thread.run { try $0.reads(of: users, since: since) }
    }

    public func earlierReads(of users: [StoredReader], among articles: [String], before: Int64) async throws -> [[String]] {
        try await thread.run { try $0.earlierReads(of: users, among: articles, before: before) }
    }

    public func recentPicks(of users: [StoredReader], weeks: [ISOWeek]) async throws -> [[String]] {
        try await thread.run { try $0.recentPicks(of: users, weeks: weeks) }
    }

    /// The three queries in one hop to the connection's thread and one read transaction (one
    /// snapshot, and one lock of the database file instead of one per statement).
    public func histories(of users: [StoredReader], request: HistoryRequest) async throws -> [ReaderHistory] {
        try await thread.run { queries in try queries.readTransaction { try queries.histories(of: users, request: request) } }
    }

    public func articles(publishedFrom from: Int64, until: Int64) async throws -> [Article] {
        try await thread.run { try $0.articles(publishedFrom: from, until: until) }
    }

    public func hasReads(from: Int64, until: Int64) async throws -> Bool {
        try await thread.run { try $0.hasReads(from: from, until: until) }
    }

    public func user(id: String) async throws -> StoredReader? {
        try await thread.run { try $0.user(id: id) }
    }

    public func users(idPrefix prefix: String, limit: Int) async throws -> [StoredReader] {
        try await thread.run { try $0.users(idPrefix: prefix, limit: limit) }
    }
}
