public import DigestCore
public import DigestStore
public import Foundation
public import Logging

/// The weekly run: every user's digest, planned and encoded, into the outbox.
///
/// Users stream in batches in key order. The store's reader reads batches, digests are computed on
/// the concurrency pool (bounded), and the store's ledger commits each batch's messages together
/// with the run's cursor, in order; ``WeeklyRunStateMachine`` decides what happens next and the task
/// group only carries out its actions. A rerun or a resumed run continues after the cursor; the
/// outbox's dedupe key keeps any redone batch from doubling a message.
///
/// ```swift
/// let run = WeeklyRun(database: SQLiteDatabase(path: "digest.sqlite"), templates: catalog,
///                     configuration: .init(week: week))
/// let summary = try await run.run()
/// ```
public struct WeeklyRun<Database: DigestPipelineStore>: Sendable {
    public typealias SendAt = WeeklyRunSendAt
    public typealias Configuration = WeeklyRunConfiguration

    /// Store housekeeping (a WAL checkpoint on SQLite) after this many committed batches.
    static var batchesPerMaintenance: Int { 8 }

    public let database: Database
    public let templates: TemplateCatalog
    public let attachments: any AttachmentProvider
    public let configuration: Configuration
    public let logger: Logger

    public init(
        database: Database, templates: TemplateCatalog, attachments: any AttachmentProvider = NoAttachments(),
        configuration: Configuration, logger: Logger = Logger(label: "digest.run")
    ) {
        self.database = database
        self.templates = templates
        self.attachments = attachments
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs the week; `progress` is called after every committed batch.
    public func run(
        now: Date = Date(), progress: @escaping @Sendable (RunProgress) -> Void = { _ in }
    ) async throws -> RunSummary {
        let week = configuration.week
        guard WeekCalendar.isComplete(week, now: now) else {
            throw RunError("week \(week) has not ended in every time zone yet; the latest complete week is \(WeekCalendar.latestCompleteWeek(now: now))")
        }
        let lock = try await database.acquireRunLock()
        defer { withExtendedLifetime(lock) {} }
        return try await database.withHistoryReader { history in
            try await database.withLedger { ledger in
                try await run(history: history, ledger: ledger, walk: nil, now: now, progress: progress)
            }
        }
    }

    /// A rolling run at `now`: for each week from the oldest one still under way (at most
    /// ``RollingRun/catchUpWeeks`` before the latest) to the latest that has ended in some zone, oldest
    /// first, the users of every zone whose week has ended at least `grace` seconds before `now` and
    /// who have no digest of it yet (users added, moved to the zone or given a device since the zone's
    /// last run included). With `only`, that week alone. Returns one summary per week that had zones
    /// to walk; the lock on SQLite is refused when another run holds it.
    public func runRolling(
        now: Date = Date(), grace: Int64 = 0, only: ISOWeek? = nil, progress: @escaping @Sendable (RunProgress) -> Void = { _ in }
    ) async throws -> [RunSummary] {
        let lock = try await database.acquireRunLock()
        defer { withExtendedLifetime(lock) {} }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        return try await database.withHistoryReader { history in
            try await database.withLedger { ledger in
                let latest = RollingRun.latestEndedWeek(at: nowSeconds - grace)
                let weeks: [ISOWeek]
                if let only {
                    weeks = [only]
                } else {
                    weeks = RollingRun.weeks(latest: latest, lastRun: try await ledger.resumeWeek())
                }
                let zones = try await history.timeZones()
                var summaries: [RunSummary] = []
                for week in weeks {
                    var weekConfiguration = configuration
                    weekConfiguration.week = week
                    let weekRun = WeeklyRun(
                        database: database, templates: templates, attachments: attachments, configuration: weekConfiguration,
                        logger: logger)
                    let calendar = WeekCalendar(week: week, delivery: configuration.delivery)
                    let ends = zones.map { calendar.window(forZone: $0).window.end }
                    let ended = zip(zones, ends).filter { $0.1 + grace <= nowSeconds }
                    guard !ended.isEmpty else { continue }
                    let cursors = try await ledger.zoneCursors(
                        week: week, zones: ended.map(\.0), endsAt: ended.map(\.1), now: nowSeconds)
                    let walk = ZoneWalk(week: week, cursors, allZonesEnded: ended.count == zones.count)
                    var summary = try await weekRun.run(history: history, ledger: ledger, walk: walk, now: now, progress: progress)
                    summary.zones = ended.count
                    summary.zonesLeft = zones.count - ended.count
                    summary.offsets = RollingRun.offsets(of: walk.touched, calendar: calendar)
                    summaries.append(summary)
                }
                return summaries
            }
        }
    }

    private func run(
        history: Database.History, ledger: Database.Ledger, walk: ZoneWalk?, now: Date,
        progress: @escaping @Sendable (RunProgress) -> Void
    ) async throws -> RunSummary {
        let started = ContinuousClock.now
        let week = configuration.week
        let nowSeconds = Int64(now.timeIntervalSince1970)
        let utc = WeekCalendar(week: week, delivery: configuration.delivery).utcWindow

        let checkpoint: RunCheckpoint
        let remaining: Int
        if let walk {
            checkpoint = RunCheckpoint(cursor: 0, finished: false, counters: RunCounters())
            remaining = try await history.countUsers(week: week, zones: walk.remaining)
        } else {
            checkpoint = try await ledger.begin(week: week, now: nowSeconds)
            remaining = try await history.countUsers(week: week, after: checkpoint.cursor)
        }
        if let walk, remaining == 0 {
            // An hourly run with nothing left in the week: no articles loaded, no batch read.
            let totals = try await ledger.finishRolling(week: week, complete: walk.allZonesEnded, now: nowSeconds)
            let elapsed = started.duration(to: .now)
            return RunSummary(
                week: week.description, sendAt: configuration.sendAt.rawValue, resumedFromCursor: 0, resumed: nil,
                wasComplete: true, seconds: elapsed.seconds,
                usersPerSecond: 0, thisRun: RunCounters(), weekTotals: totals, images: [:])
        }
        let started0 = walk?.started ?? false
        // Every zone's week lies within 14 hours (ahead) or 12 hours (behind) of the UTC week.
        let hasReads = try await history.hasReads(from: utc.start - 14 * 3600, until: utc.end + 12 * 3600)
        let range = configuration.compose.articleRange
        let articles = try await history.articles(publishedFrom: range.from, until: range.until)
        if walk != nil, !hasReads, !configuration.allowEmptyWeek, !started0 {
            // Rolling: the week's reads are not imported yet; the next hourly run looks again.
            var summary = RunSummary(
                week: week.description, sendAt: configuration.sendAt.rawValue, resumedFromCursor: 0, resumed: nil,
                wasComplete: false, seconds: 0, usersPerSecond: 0, thisRun: RunCounters(), weekTotals: RunCounters(), images: [:])
            summary.waitingForReads = true
            return summary
        }
        guard hasReads || configuration.allowEmptyWeek || checkpoint.cursor > 0 || started0 else {
            throw RunError("no reads in week \(week) (\(Timestamp.format(utc.start)) to \(Timestamp.format(utc.end)), UTC): import that week's reads first, or pass --allow-empty-week")
        }
        logger.info(
            "run starting",
            metadata: ["digest.week": "\(week)", "digest.users": "\(remaining)", "digest.cursor": "\(checkpoint.cursor)"])
        let composer = BatchComposer(
            configuration: configuration.compose, articles: articles, templates: templates, attachments: attachments,
            now: nowSeconds)

        var thisRun = RunCounters()
        var tracker = ProgressTracker(total: remaining, started: started)
        progress(tracker.snapshot(week: week, counters: thisRun))
        let batchSize = configuration.batchSize

        try await withThrowingTaskGroup(of: PipelineEvent.self) { group in
            var machine = WeeklyRunStateMachine<ReadBatch, BatchResult>(
                cursor: checkpoint.cursor, concurrency: max(1, configuration.concurrency),
                batchesPerMaintenance: Self.batchesPerMaintenance)
            var finished = false
            /// Carries out the machine's actions; a failure ends the run with its error.
            func perform(_ actions: [WeeklyRunStateMachine<ReadBatch, BatchResult>.Action]) throws {
                for action in actions {
                    switch action {
                    case .read(let after):
                        group.addTask {
                            await PipelineEvent.catching {
                                if let walk {
                                    return .read(try await walk.load(from: history, limit: batchSize, composer: composer))
                                }
                                return .read(try await ReadBatch.load(from: history, after: after, limit: batchSize, composer: composer))
                            }
                        }
                    case .compose(let sequence, let batch):
                        group.addTask { .composed(sequence, await batch.compose(with: composer, sequence: sequence)) }
                    case .write(let sequence, let result):
                        group.addTask {
                            await PipelineEvent.catching {
                                let inserted =
                                    if let cursors = result.zoneCursors {
                                        try await ledger.commit(
                                            week: week, zones: cursors, users: result.composed.userCount,
                                            messages: result.composed.messages, counters: result.composed.counters, now: nowSeconds)
                                    } else {
                                        try await ledger.commit(
                                            week: week, through: result.lastKey, messages: result.composed.messages,
                                            counters: result.composed.counters, now: nowSeconds)
                                    }
                                return .written(sequence, result, inserted)
                            }
                        }
                    case .maintain:
                        group.addTask {
                            await PipelineEvent.catching {
                                try await ledger.maintain()
                                return .maintained
                            }
                        }
                    case .finish:
                        finished = true
                    case .fail(let error):
                        throw error
                    }
                }
            }

            try perform(machine.start())
            while !finished, let event = try await group.next() {
                if Task.isCancelled {
                    try perform(machine.cancelled())
                    continue
                }
                switch event {
                case .read(let batch?):
                    try perform(machine.readCompleted(batch, lastKey: batch.lastKey))
                case .read(nil):
                    try perform(machine.readExhausted())
                case .composed(let sequence, let result):
                    try perform(machine.composed(sequence: sequence, result))
                case .written(let sequence, let result, let inserted):
                    var counters = result.composed.counters
                    counters.enqueued = inserted
                    thisRun.add(counters)
                    tracker.advance(by: result.composed.userCount)
                    progress(tracker.snapshot(week: week, counters: thisRun))
                    try perform(machine.written(sequence: sequence))
                case .maintained:
                    try perform(machine.maintained())
                case .failed(let error):
                    try perform(machine.failed(error))
                }
            }
        }
        let totals =
            if let walk {
                try await ledger.finishRolling(week: week, complete: walk.remaining.isEmpty && walk.allZonesEnded, now: nowSeconds)
            } else {
                try await ledger.finish(week: week, now: nowSeconds)
            }
        let elapsed = started.duration(to: .now)
        let seconds = elapsed.seconds
        let images = await (attachments as? any AttachmentStatistics)?.statistics() ?? [:]
        return RunSummary(
            week: week.description, sendAt: configuration.sendAt.rawValue, resumedFromCursor: checkpoint.cursor,
            resumed: checkpoint.resumed,
            wasComplete: walk == nil ? checkpoint.finished && remaining == 0 : remaining == 0, seconds: seconds,
            usersPerSecond: seconds > 0 ? Double(thisRun.users) / seconds : 0, thisRun: thisRun, weekTotals: totals,
            images: images)
    }
}

/// When messages become due.
public typealias WeeklyRunSendAt = BatchComposer.SendAt

/// How the run works: what shapes the messages (``compose``) and how the run goes about it.
public struct WeeklyRunConfiguration: Sendable {
    /// The week, delivery and the builder's, planner's and encoder's settings.
    public var compose: BatchComposer.Configuration
    /// Users per batch (one outbox transaction each).
    public var batchSize = 1000
    /// Batches computed at once.
    public var concurrency = Self.processors
    /// The processors this process may use, read once: Foundation reads the cgroup's files each time
    /// it is asked, and `digest serve` makes a configuration for every preview it composes.
    static let processors = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Run even when the week has no reads at all (everyone gets the re-engagement digest).
    public var allowEmptyWeek = false

    public init(week: ISOWeek) {
        compose = BatchComposer.Configuration(week: week)
    }

    public var week: ISOWeek {
        get { compose.week }
        set { compose.week = newValue }
    }
    public var sendAt: WeeklyRunSendAt {
        get { compose.sendAt }
        set { compose.sendAt = newValue }
    }
    public var delivery: WeekCalendar.DeliveryTime {
        get { compose.delivery }
        set { compose.delivery = newValue }
    }
    public var digest: DigestBuilder.Configuration {
        get { compose.digest }
        set { compose.digest = newValue }
    }
    public var planner: VariantPlanner.Configuration {
        get { compose.planner }
        set { compose.planner = newValue }
    }
    public var encoder: NotificationEncoder.Configuration {
        get { compose.encoder }
        set { compose.encoder = newValue }
    }
    /// `--reply-key-file`: every message carries its `reply_key`.
    package var replyKeys: ReplyKeys? {
        get { compose.replyKeys }
        set { compose.replyKeys = newValue }
    }
}

/// A run that cannot start or go on; the message says why and what to do.
public struct RunError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What finished in the run's task group.
enum PipelineEvent: Sendable {
    case read(ReadBatch?)
    case composed(Int, BatchResult)
    case written(Int, BatchResult, Int)
    case maintained
    case failed(any Error)

    /// The event `body` gives, or its error as ``failed(_:)``.
    static func catching(_ body: () async throws -> PipelineEvent) async -> PipelineEvent {
        do { return try await body() } catch { return .failed(error) }
    }
}
