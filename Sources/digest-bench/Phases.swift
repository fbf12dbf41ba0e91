import ArgumentParser
import DigestCore
import DigestSQLite
import DigestStore
import Foundation

/// `digest-bench phases`: where a run's time goes, one user batch at a time on one thread, through
/// the same public calls the run's pipeline makes (read the batch, build each digest, resolve the
/// locale's templates, plan, encode one message per device, commit the batch to the outbox).
///
/// This mirrors `BatchComposer.compose` and `WeeklyRun` (DigestRun) step by step, timing each step;
/// it is a diagnostic, not part of the targets. Run it on a copy: it writes to the outbox.
struct Phases: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time the run's steps one by one on one thread (diagnostic; writes to the outbox of --db).")

    @Option(help: "A generated database (a copy: its outbox is written).")
    var db: String

    @Option(help: "The ISO week, e.g. 2026-W46.")
    var week: String

    @Option(help: "Users to go through (from the first).")
    var users: Int = 50_000

    @Option(help: "Users per batch, as in the run.")
    var batchSize: Int = 1000

    @Option(help: "The Templates/ directory.")
    var templates: String = "Templates"

    func run() async throws {
        let database = SQLiteDatabase(path: db)
        try await database.withHistoryReader { history in
            try await database.withLedger { ledger in try await run(history: history, ledger: ledger) }
        }
    }

    private func run(history: SQLiteHistoryReader, ledger: SQLiteRunLedger) async throws {
        let week = try ISOWeek(parsing: week)
        let catalog = try TemplateCatalog(directory: URL(fileURLWithPath: templates))
        let calendar = WeekCalendar(week: week)
        let utc = calendar.utcWindow
        let builderConfiguration = DigestBuilder.Configuration()
        let articles = try await history.articles(
            publishedFrom: utc.end - builderConfiguration.freshnessSeconds - 14 * 3600, until: utc.end + 12 * 3600)
        let builder = DigestBuilder(pool: CandidatePool(articles: articles), configuration: builderConfiguration)
        let planner = VariantPlanner()
        let now = Int64(Date().timeIntervalSince1970)
        // The run's composer, for what it asks of the store (reads since, candidates, weeks).
        let composer = BatchComposer(
            configuration: BatchComposer.Configuration(week: week), articles: articles, templates: catalog,
            attachments: NoAttachments(), now: now)
        _ = try await ledger.begin(week: week, now: now)

        var seconds: [String: Double] = [:]
        func timed<T>(_ phase: String, _ body: () throws -> T) rethrows -> T {
            let clock = Stopwatch()
            defer { seconds[phase, default: 0] += clock.seconds }
            return try body()
        }
        func timedAsync<T>(_ phase: String, _ body: () async throws -> T) async rethrows -> T {
            let clock = Stopwatch()
            defer { seconds[phase, default: 0] += clock.seconds }
            return try await body()
        }
        var cursor: Int64 = 0
        var done = 0
        var messagesTotal = 0
        let total = Stopwatch()
        while done < users {
            let next = try await timedAsync("1 read batch (users, devices, reads)") { () async throws -> UserBatch? in
                try await history.nextBatch(week: week, after: cursor, limit: min(batchSize, users - done))
            }
            guard let batch = next?.users, let last = batch.last else { break }
            let histories = try await timedAsync("1 read batch (users, devices, reads)") {
                try await history.histories(of: batch, for: composer)
            }
            var messages: [OutboxMessage] = []
            var counters = RunCounters()
            for (stored, readerHistory) in zip(batch, histories) {
                let reader = stored.reader
                counters.users += 1
                if reader.optedOut || reader.devices.isEmpty { continue }
                let window = calendar.window(forZone: reader.timeZone).window
                if builder.isDormant(window: window, reads: readerHistory.reads) { continue }
                let digest = timed("2 build digest") { builder.build(reader: reader, window: window, history: readerHistory) }
                let localized = timed("3 resolve locale templates") { catalog.localized(for: reader.locale) }
                let image: ImageOutcome? =
                    digest.picks.first?.imageURL == nil ? nil : .unavailable(reason: "attachments not configured")
                let platforms = Set(reader.devices.map(\.platform))
                guard
                    let plan = try? timed("4 plan (templates, text rules, budgets)", { () throws -> NotificationPlan in
                        try planner.plan(digest, templates: localized, image: image, platforms: platforms)
                    })
                else { continue }
                counters.digested += 1
                let report = timed("5 report JSON") { plan.reportJSON() }
                for device in reader.devices {
                    let key = timed("6 dedupe key (SHA-256)") {
                        OutboxMessage.dedupeKey(week: window.week, userID: reader.id, token: device.token)
                    }
                    let body = timed("7 encode FCM message") { planner.encoder.message(for: plan, device: device) }
                    messages.append(
                        OutboxMessage(
                            dedupeKey: key, week: window.week.description, userID: reader.id, platform: device.platform,
                            variant: plan.variant, message: body, report: report, availableAt: now))
                }
                counters.messages += reader.devices.count
            }
            messagesTotal += messages.count
            _ = try await timedAsync("8 commit batch to outbox") {
                try await ledger.commit(week: week, through: last.key, messages: messages, counters: counters, now: now)
            }
            cursor = last.key
            done += batch.count
        }
        let elapsed = total.seconds
        let compute = seconds.filter { $0.key.first.map { "234567".contains($0) } ?? false }.values.reduce(0, +)
        let io = (seconds["1 read batch (users, devices, reads)"] ?? 0) + (seconds["8 commit batch to outbox"] ?? 0)
        print("phases: \(done) users, \(messagesTotal) messages, one thread, \(String(format: "%.2f", elapsed)) s")
        print("phase                                      seconds   µs/user   share")
        for (phase, value) in seconds.sorted(by: { $0.key < $1.key }) {
            print(
                phase.padding(toLength: 40, withPad: " ", startingAt: 0)
                    + String(format: "%10.2f %9.1f %6.1f%%", value, value / Double(done) * 1e6, value / elapsed * 100))
        }
        print(
            String(
                format: "compute (2-7) %.1f µs/user, I/O (1, 8) %.1f µs/user; compute alone on 2 cores, perfectly parallel: at most %.0f users/s",
                compute / Double(done) * 1e6, io / Double(done) * 1e6, 2 * Double(done) / compute))
    }
}
