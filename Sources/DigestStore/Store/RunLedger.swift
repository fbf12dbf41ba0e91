public import DigestCore

/// Where a run stands for a week: how far it got and what it did so far.
public struct RunCheckpoint: Sendable {
    /// Users with keys up to this one are done.
    public var cursor: Int64
    /// `true` once a run went through every user.
    public var finished: Bool
    public var counters: RunCounters
    /// Where an earlier run (or other workers) left the week, for the summary; `nil` on a fresh start.
    public var resumed: String?

    public init(cursor: Int64, finished: Bool, counters: RunCounters, resumed: String? = nil) {
        self.cursor = cursor
        self.finished = finished
        self.counters = counters
        self.resumed = resumed
    }
}

/// The outbox as the run writes it, with the run's bookkeeping. A batch's messages and its
/// completion commit in one transaction, so a crash loses or doubles nothing. Used by one task at a
/// time.
public protocol RunLedger: Sendable {
    /// Starts or resumes the week's run and returns where it stands.
    func begin(week: ISOWeek, now: Int64) async throws -> RunCheckpoint
    /// Enqueues messages idempotently (by dedupe key) and moves the cursor to `through`, atomically.
    /// Returns how many messages were new.
    func commit(week: ISOWeek, through key: Int64, messages: [OutboxMessage], counters: RunCounters, now: Int64)
        async throws -> Int
    /// Housekeeping between batches, called while nothing reads (SQLite: checkpoint and restart the
    /// WAL, which concurrent reading would otherwise keep growing).
    func maintain() async throws
    /// Marks the week's run done and returns the week's totals over every run of it.
    func finish(week: ISOWeek, now: Int64) async throws -> RunCounters

    /// Rolling runs: starts or resumes the week (as ``begin(week:now:)``) and returns the cursors of
    /// `zones` (`seq` 0 for a zone the week has not walked yet); `endsAt` is when the week ends in
    /// each zone (for the status).
    func zoneCursors(week: ISOWeek, zones: [String], endsAt: [Int64], now: Int64) async throws -> [ZoneCursor]
    /// Rolling runs: as ``commit(week:through:messages:counters:now:)``, also moving the cursors of
    /// the zones the batch came from, in the same transaction.
    func commit(
        week: ISOWeek, zones: [ZoneCursor], users: Int, messages: [OutboxMessage], counters: RunCounters, now: Int64
    ) async throws -> Int
    /// Rolling runs: the week they resume from: the oldest week whose run is still under way (a zone
    /// left, or no reads yet when it was reached), else the latest week any run started; `nil`
    /// before the first run.
    func resumeWeek() async throws -> ISOWeek?
    /// Rolling runs: marks the week done when every zone's users are done (`complete`), and returns
    /// the week's totals over every run of it.
    func finishRolling(week: ISOWeek, complete: Bool, now: Int64) async throws -> RunCounters
}
