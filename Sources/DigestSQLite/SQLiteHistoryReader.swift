public import DigestCore
public import DigestStore
import DigestThreads

/// ``HistoryReader`` on SQLite: a reader connection of the store is its own for the scope; each call
/// runs its statements synchronously on that connection's thread (batches are key ranges of `users`,
/// in key order).
public final class SQLiteHistoryReader: HistoryReader {
    let thread: DedicatedThread<SQLiteReader>
    /// The scope whose queries (and article caches) this reader uses on the thread.
    let scope: UInt64

    init(thread: DedicatedThread<SQLiteReader>, scope: UInt64) {
        self.thread = thread
        self.scope = scope
    }

    /// Runs `body` with the scope's queries on the reader's thread.
    private func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteHistoryQueries) throws -> T) async throws -> T {
        let scope = scope
        return try await thread.run { reader in
            defer { reader.connection.endLeftovers() }
            guard let queries = reader.histories[scope] else { throw SQLiteError(code: 21, message: "the history reader's scope has ended", path: reader.connection.path) }
            return try body(queries)
        }
    }

    public func nextBatch(week: ISOWeek, after cursor: Int64, limit: Int) async throws -> UserBatch? {
        try await run { queries in
            let users = try queries.users(after: cursor, limit: limit)
            guard let last = users.last else { return nil }
            return UserBatch(users: users, position: last.key)
        }
    }

    public func timeZones() async throws -> [String] {
        try await run { try $0.timeZones() }
    }

    public func nextBatch(week: ISOWeek, zones: [ZoneCursor], limit: Int) async throws -> ZoneBatch {
        try await run { queries in try queries.readTransaction { try queries.users(zones: zones, limit: limit) } }
    }

    public func countUsers(week: ISOWeek, zones: [ZoneCursor]) async throws -> Int {
        try await run { try $0.countUsers(zones: zones) }
    }

    public func countUsers(week: ISOWeek, after key: Int64) async throws -> Int {
        try await run { try $0.countUsers(after: key) }
    }

    public func reads(of users: [StoredReader], since: [Int64]) async throws -> [[ReadEvent]] {
        try await run { try $0.reads(of: users, since: since) }
    }

    public func earlierReads(of users: [StoredReader], among articles: [String], before: Int64) async throws -> [[String]] {
        try await run { try $0.earlierReads(of: users, among: articles, before: before) }
    }

    public func recentPicks(of users: [StoredReader], weeks: [ISOWeek]) async throws -> [[String]] {
        try await run { try $0.recentPicks(of: users, weeks: weeks) }
    }

    /// The three queries in one hop to the connection's thread and one read transaction (one
    /// snapshot, and one lock of the database file instead of one per statement).
    public func histories(of users: [StoredReader], request: HistoryRequest) async throws -> [ReaderHistory] {
        try await run { queries in try queries.readTransaction { try queries.histories(of: users, request: request) } }
    }

    public func articles(publishedFrom from: Int64, until: Int64) async throws -> [Article] {
        try await run { try $0.articles(publishedFrom: from, until: until) }
    }

    public func hasReads(from: Int64, until: Int64) async throws -> Bool {
        try await run { try $0.hasReads(from: from, until: until) }
    }

    public func user(id: String) async throws -> StoredReader? {
        try await run { try $0.user(id: id) }
    }

    public func users(idPrefix prefix: String, limit: Int) async throws -> [StoredReader] {
        try await run { try $0.users(idPrefix: prefix, limit: limit) }
    }

    public func users(afterID id: String, limit: Int) async throws -> [StoredReader] {
        try await run { try $0.users(afterID: id, limit: limit) }
    }
}
