public import DigestCore
public import DigestStore
public import Foundation
public import Logging

/// The weekly run: every user's digest, planned and encoded, into the outbox.
///
/// Users stream in batches in key order. A dedicated thread reads batches, digests are computed on
/// the concurrency pool (bounded), and a second thread commits each batch's messages together with
/// the run's cursor, in order. A rerun or a resumed run continues after the cursor; the outbox's
/// dedupe key keeps any redone batch from doubling a message.
///
/// ```swift
/// let run = WeeklyRun(database: .sqlite(path: "digest.sqlite"), templates: catalog,
///                     configuration: .init(week: week))
/// let summary = try await run.run()
/// ```
public struct WeeklyRun<Database: DigestDatabase>: Sendable {
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
        let started = ContinuousClock.now
        let week = configuration.week
        guard WeekCalendar.isComplete(week, now: now) else {
            throw RunError("week \(week) has not ended in every time zone yet; the latest complete week is \(WeekCalendar.latestCompleteWeek(now: now))")
        }
        let lock = try database.acquireRunLock()
        defer { withExtendedLifetime(lock) {} }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        let calendar = WeekCalendar(week: week, delivery: configuration.delivery)
        let utc = calendar.utcWindow

        let readerThread = IOThread(name: "digest-reader")
        let writerThread = IOThread(name: "digest-writer")
        defer {
            readerThread.shutdown()
            writerThread.shutdown()
        }
        let history = try await readerThread.run { ThreadConfined(try database.makeHistoryReader()) }
        let ledger = try await writerThread.run { ThreadConfined(try database.makeLedger()) }

        let checkpoint = try await writerThread.run { try ledger.value.begin(week: week, now: nowSeconds) }
        // Every zone's week lies within 14 hours (ahead) or 12 hours (behind) of the UTC week.
        let (remaining, hasReads, articles) = try await readerThread.run {
            let remaining = try history.value.countUsers(week: week, after: checkpoint.cursor)
            let hasReads = try history.value.hasReads(from: utc.start - 14 * 3600, until: utc.end + 12 * 3600)
            let range = Self.articleRange(utc: utc, digest: configuration.digest)
            let articles = try history.value.articles(publishedFrom: range.from, until: range.until)
            return (remaining, hasReads, articles)
        }
        guard hasReads || configuration.allowEmptyWeek || checkpoint.cursor > 0 else {
            throw RunError("no reads in week \(week) (\(Timestamp.format(utc.start)) to \(Timestamp.format(utc.end)), UTC): import that week's reads first, or pass --allow-empty-week")
        }
        logger.info(
            "run starting",
            metadata: ["digest.week": "\(week)", "digest.users": "\(remaining)", "digest.cursor": "\(checkpoint.cursor)"])
        let composer = Self.composer(
            configuration: configuration, calendar: calendar, articles: articles, templates: templates,
            attachments: attachments, now: nowSeconds)

        var thisRun = RunCounters()
        var tracker = ProgressTracker(total: remaining, started: started)
        progress(tracker.snapshot(week: week, counters: thisRun))
        let batchSize = configuration.batchSize
        let concurrency = max(1, configuration.concurrency)

        try await withThrowingTaskGroup(of: PipelineEvent.self) { group in
            var cursor = checkpoint.cursor
            var readSequence = 0
            var nextToWrite = 0
            var reading = false
            var readingDone = false
            var computing = 0
            var writing = false
            var pending: [Int: BatchResult] = [:]
            var writesSinceMaintenance = 0
            var maintenanceDue = false

            func startRead() {
                guard !reading, !readingDone, !maintenanceDue, computing + pending.count < concurrency * 2 else { return }
                reading = true
                let after = cursor
                group.addTask {
                    .read(try await readerThread.run { try ReadBatch.load(from: history.value, after: after, limit: batchSize, calendar: calendar) })
                }
            }
            func startWrite() {
                guard !writing else { return }
                // Housekeeping runs on the writer while no read is going (the store asks for that).
                if maintenanceDue && !reading {
                    writing = true
                    group.addTask {
                        try await writerThread.run { try ledger.value.maintain() }
                        return .maintained
                    }
                    return
                }
                guard let result = pending.removeValue(forKey: nextToWrite) else { return }
                writing = true
                let sequence = nextToWrite
                group.addTask {
                    let inserted = try await writerThread.run {
                        try ledger.value.commit(
                            week: week, through: result.lastKey, messages: result.messages, counters: result.counters,
                            now: nowSeconds)
                    }
                    return .written(sequence, result, inserted)
                }
            }

            startRead()
            while let event = try await group.next() {
                switch event {
                case .read(let batch?):
                    reading = false
                    startWrite()
                    cursor = batch.lastKey
                    let sequence = readSequence
                    readSequence += 1
                    computing += 1
                    group.addTask { .computed(sequence, await composer.compose(batch)) }
                    startRead()
                case .read(nil):
                    reading = false
                    readingDone = true
                    startWrite()
                case .computed(let sequence, let result):
                    computing -= 1
                    pending[sequence] = result
                    startWrite()
                    startRead()
                case .written(_, let result, let inserted):
                    writing = false
                    nextToWrite += 1
                    var counters = result.counters
                    counters.enqueued = inserted
                    thisRun.add(counters)
                    tracker.advance(by: result.userCount)
                    progress(tracker.snapshot(week: week, counters: thisRun))
                    writesSinceMaintenance += 1
                    if writesSinceMaintenance >= Self.batchesPerMaintenance { maintenanceDue = true }
                    startWrite()
                    startRead()
                case .maintained:
                    writing = false
                    maintenanceDue = false
                    writesSinceMaintenance = 0
                    startWrite()
                    startRead()
                }
            }
        }
        let totals = try await writerThread.run { try ledger.value.finish(week: week, now: nowSeconds) }
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let images = await (attachments as? any AttachmentStatistics)?.statistics() ?? [:]
        return RunSummary(
            week: week.description, sendAt: configuration.sendAt.rawValue, resumedFromCursor: checkpoint.cursor,
            resumed: checkpoint.resumed,
            wasComplete: checkpoint.finished && remaining == 0, seconds: seconds,
            usersPerSecond: seconds > 0 ? Double(thisRun.users) / seconds : 0, thisRun: thisRun, weekTotals: totals,
            images: images)
    }
}

extension WeeklyRun {
    /// Articles a week's digests can pick from: every zone's window lies within 14 hours (ahead) or 12
    /// hours (behind) of the UTC week.
    static func articleRange(utc: WeekWindow, digest: DigestBuilder.Configuration) -> (from: Int64, until: Int64) {
        (utc.end - digest.freshnessSeconds - 14 * 3600, utc.end + 12 * 3600)
    }

    /// The composer the run uses; previews build theirs here too, so both take one code path.
    static func composer(
        configuration: Configuration, calendar: WeekCalendar, articles: [Article], templates: TemplateCatalog,
        attachments: any AttachmentProvider, now: Int64
    ) -> BatchComposer {
        BatchComposer(
            calendar: calendar,
            builder: DigestBuilder(pool: CandidatePool(articles: articles), configuration: configuration.digest),
            templates: templates,
            planner: VariantPlanner(configuration: configuration.planner, encoder: FCMEncoder(configuration: configuration.encoder)),
            attachments: attachments,
            sendNow: configuration.sendAt == .now ? now : nil)
    }
}

/// When messages become due.
public enum WeeklyRunSendAt: String, Sendable {
    /// The Monday after the week, at the delivery time, in each user's zone.
    case local
    /// At once.
    case now
}

/// How the run works.
public struct WeeklyRunConfiguration: Sendable {
    public var week: ISOWeek
    public var sendAt: WeeklyRunSendAt = .local
    public var delivery: WeekCalendar.DeliveryTime = .mondayMorning
    /// Users per batch (one outbox transaction each).
    public var batchSize = 1000
    /// Batches computed at once.
    public var concurrency = max(1, ProcessInfo.processInfo.activeProcessorCount)
    public var digest = DigestBuilder.Configuration()
    public var planner = VariantPlanner.Configuration()
    public var encoder = FCMEncoder.Configuration()
    /// Run even when the week has no reads at all (everyone gets the re-engagement digest).
    public var allowEmptyWeek = false

    public init(week: ISOWeek) {
        self.week = week
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
    case computed(Int, BatchResult)
    case written(Int, BatchResult, Int)
    case maintained
}
