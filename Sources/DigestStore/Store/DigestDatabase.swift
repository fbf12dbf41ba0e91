import DigestCore

/// A store the weekly run works on: history to read, an outbox to fill, run bookkeeping.
///
/// SQLite is the embedded default (``SQLiteDatabase``); each reading or writing thread gets its own
/// reader or ledger.
public protocol DigestDatabase: Sendable {
    associatedtype History: HistoryReader
    associatedtype Ledger: RunLedger
    associatedtype Consumer: OutboxConsumer

    /// Creates or upgrades the schema; returns the versions before and after.
    func migrate() throws -> (from: Int, to: Int)
    /// A new reader of history (one per thread).
    func makeHistoryReader() throws -> History
    /// A new writer of the outbox and run bookkeeping (one per thread).
    func makeLedger() throws -> Ledger
    /// A new consumer of the outbox, for a sender (one per thread).
    func makeOutboxConsumer() throws -> Consumer
    /// Refuses a second run on the same database while one is going (`nil` where processes share a
    /// run instead).
    func acquireRunLock() throws -> RunLock?
    /// Messages in the outbox by state, platform, variant and week.
    func outboxStats() throws -> OutboxStats
    /// The first `limit` messages (optionally of one state), oldest first.
    func peek(limit: Int, state: String?) throws -> [OutboxRow]
    /// A user's messages for a week (one per device), oldest first.
    func outboxRows(week: String, userID: String) throws -> [OutboxRow]
    /// The weeks the outbox holds messages of this user for, newest first.
    func outboxWeeks(userID: String) throws -> [String]
}

/// Counts of outbox messages.
public struct OutboxStats: Sendable, Codable, Hashable {
    public var total: Int
    public var byState: [String: Int]
    public var byPlatform: [String: Int]
    public var byVariant: [String: Int]
    public var byWeek: [String: Int]
    /// `ready` messages whose `available_at` has come.
    public var due: Int

    public init(total: Int = 0, byState: [String: Int] = [:], byPlatform: [String: Int] = [:],
                byVariant: [String: Int] = [:], byWeek: [String: Int] = [:], due: Int = 0) {
        self.total = total
        self.byState = byState
        self.byPlatform = byPlatform
        self.byVariant = byVariant
        self.byWeek = byWeek
        self.due = due
    }
}

/// One outbox row, as `digest queue peek` shows it.
public struct OutboxRow: Sendable, Hashable {
    public var id: Int64
    public var dedupeKey: String
    public var week: String
    public var userID: String
    public var platform: String
    public var variant: String
    public var message: String
    public var report: String
    public var availableAt: Int64
    public var state: String
    public var attempts: Int
    public var lastError: String?

    public init(id: Int64, dedupeKey: String, week: String, userID: String, platform: String, variant: String,
                message: String, report: String, availableAt: Int64, state: String, attempts: Int, lastError: String?) {
        self.id = id
        self.dedupeKey = dedupeKey
        self.week = week
        self.userID = userID
        self.platform = platform
        self.variant = variant
        self.message = message
        self.report = report
        self.availableAt = availableAt
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
    }
}
