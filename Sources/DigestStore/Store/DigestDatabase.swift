public import DigestCore

/// A store: what the pipeline works on (``DigestPipelineStore``: history to read, an outbox to fill
/// and consume, run bookkeeping, app events to record) and what the operator's commands and the
/// preview pages read and tidy (``DigestOperatorViews``). Both backends are both.
///
/// Every call is async and never blocks the caller's thread: SQLite (`DigestSQLite`) runs its
/// synchronous statements on threads of its own, where its connections live; PostgreSQL
/// (`DigestPostgres`) talks to the server through PostgresNIO's async API. A store opens its
/// connections once and every call borrows one (``close()`` ends them). Long-lived parts (a reader,
/// a ledger, a consumer, an import sink) come scoped: they hold what they need for `body` and give it
/// back when it returns or throws.
///
/// ```swift
/// let totals = try await database.withLedger { ledger in
///     _ = try await ledger.begin(week: week, now: now)
///     return try await ledger.finish(week: week, now: now)
/// }
/// ```
public typealias DigestDatabase = DigestPipelineStore & DigestOperatorViews & PreferenceStore

/// What the weekly run, the importer, the sender and the event collector work on.
public protocol DigestPipelineStore: Sendable {
    associatedtype History: HistoryReader
    associatedtype Ledger: RunLedger
    associatedtype Consumer: OutboxConsumer
    associatedtype Importer: HistoryImportSink
    associatedtype Events: EventSink

    /// Creates or upgrades the schema; returns the versions before and after.
    func migrate() async throws -> (from: Int, to: Int)
    /// Runs `body` with a reader of history (used by one task at a time), closed afterwards.
    func withHistoryReader<T>(_ body: (History) async throws -> T) async throws -> T
    /// Runs `body` with a writer of the outbox and run bookkeeping, closed afterwards.
    func withLedger<T>(_ body: (Ledger) async throws -> T) async throws -> T
    /// Runs `body` with a consumer of the outbox, for a sender, closed afterwards.
    func withOutboxConsumer<T>(_ body: (Consumer) async throws -> T) async throws -> T
    /// Runs `body` with a writer of imported records, closed afterwards.
    func withImportSink<T>(_ body: (Importer) async throws -> T) async throws -> T
    /// Runs `body` with a writer of app events (`digest collect`; used by many tasks at once), closed
    /// afterwards.
    func withEventSink<T>(_ body: (Events) async throws -> T) async throws -> T
    /// Refuses a second run on the same database while one is going (`nil` where processes share a
    /// run instead).
    func acquireRunLock() async throws -> RunLock?
    /// Closes the store's connections and stops their threads, once the calls already given are done.
    func close() async
}

/// What the operator's commands (`queue`, `run --status`, `devices`, `report`) and the preview pages
/// read, and the tidying they do.
public protocol DigestOperatorViews: Sendable {
    /// A week's sent messages and app events per variant, platform, locale and A/B arm
    /// (`digest report`), sorted by those.
    func eventCounts(week: String) async throws -> [EventCounts]
    /// Where each week's run stands (the latest 20 weeks, or only `week`), newest first.
    func runStatus(week: ISOWeek?) async throws -> [RunStatus]
    /// Messages in the outbox by state, platform, variant, week and provider; `due` counts those due at `now`.
    func outboxStats(now: Int64) async throws -> OutboxStats
    /// The first `limit` messages (optionally of one state), oldest first.
    func peek(limit: Int, state: OutboxDelivery.State?) async throws -> [OutboxRow]
    /// A user's messages for a week (one per device), oldest first.
    func outboxRows(week: String, userID: String) async throws -> [OutboxRow]
    /// The weeks the outbox holds messages of this user for, newest first.
    func outboxWeeks(userID: String) async throws -> [String]
    /// Forgets that FCM called `token` unregistered, so later runs send to it again (`digest devices
    /// revive`); returns whether it was dead.
    func reviveToken(_ token: String) async throws -> Bool
    /// Deletes the messages settled (`sent`, `dead`, `expired`) more than `retention.age` before `now`
    /// and the picks of the weeks before `retention.firstKeptPicksWeek(now:)`, `retention.batchSize`
    /// rows a transaction, oldest first; with `retention.dryRun` only counts them. Safe to run beside
    /// runs and senders: a batch locks only the rows it deletes, a message requeued meanwhile stays.
    func prune(_ retention: OutboxRetention, now: Int64) async throws -> OutboxPruneResult
    /// The image URLs (`imageUrl`, `iconUrl`, APNs `fcm_options.image`, web `image` and `icon`) of the
    /// Image messages still within their TTL at `now`: every `ready` or `leased` one, and those sent or
    /// dead whose `expires_at` is after `now` (a device may still fetch the picture, a requeue may
    /// still send it). Distinct, so as many as the images of a few weeks' top picks.
    func liveImageURLs(now: Int64) async throws -> Set<String>
    /// Rolling runs: per zone, the week's users digested and still waiting.
    func zoneProgress(week: ISOWeek) async throws -> [ZoneProgress]
    /// Records `send` at `now` (Unix seconds) unless its device had `perMinute` test sends in the
    /// minute before; returns whether it was recorded (and may go out). Many processes may ask at once:
    /// the count and the insert are one transaction.
    func recordTestSend(_ send: TestSend, now: Int64, perMinute: Int) async throws -> Bool
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
    /// Messages by push service (``Provider``'s names).
    public var byProvider: [String: Int]

    public init(total: Int = 0, byState: [String: Int] = [:], byPlatform: [String: Int] = [:],
                byVariant: [String: Int] = [:], byWeek: [String: Int] = [:], due: Int = 0, byProvider: [String: Int] = [:]) {
        self.byProvider = byProvider
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
    public var platform: Platform
    public var variant: Variant
    public var message: String
    public var report: String
    public var availableAt: Int64
    public var state: OutboxDelivery.State
    public var attempts: Int
    public var lastError: String?
    /// The id the apps report events with (`nil` on rows written before messages carried one).
    public var messageID: String?
    /// The locale whose templates composed the message (`nil` on rows from before it was kept).
    public var locale: String?
    /// The push service the message goes through.
    public var provider: Provider
    /// The token it goes to. Never shown whole: `digest queue peek` masks it.
    public var target: String
    /// The APNs request headers, a JSON object (`nil` for FCM).
    public var headers: String?
    /// `--deliver-at habit`: how the due time was chosen (`nil` otherwise, or an unknown value).
    package var timing: DeliveryTiming?
    /// The local time of day chosen, `HH:MM` (`nil` on rows from before it was kept).
    package var dueLocal: String?

    public init(id: Int64, dedupeKey: String, week: String, userID: String, platform: Platform, variant: Variant,
                message: String, report: String, availableAt: Int64, state: OutboxDelivery.State, attempts: Int, lastError: String?,
                messageID: String? = nil, locale: String? = nil, provider: Provider = .fcm, target: String = "", headers: String? = nil) {
        self.provider = provider
        self.target = target
        self.headers = headers
        self.messageID = messageID
        self.locale = locale
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

extension OutboxRow {
    /// A `platform`, `variant`, `state` or `provider` column's value as its enum; a value this version does not
    /// know (a row written by a newer one, or by hand) is an error naming the column and the row.
    package static func column<Value: RawRepresentable<String>>(_ raw: String, _ name: String, row id: Int64) throws -> Value {
        guard let value = Value(rawValue: raw) else { throw UnknownOutboxValue(column: name, value: raw, rowID: id) }
        return value
    }
}

/// An outbox row whose `platform`, `variant`, `state` or `provider` holds a value this version does not know.
public struct UnknownOutboxValue: Error, CustomStringConvertible, Hashable {
    package var column: String
    package var value: String
    package var rowID: Int64

    public var description: String {
        "outbox row \(rowID): unknown \(column) '\(value)' (written by a newer digest? see `digest migrate`)"
    }
}
