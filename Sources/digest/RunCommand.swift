import ArgumentParser
import DigestCore
import DigestImageCodecs
import DigestImages
import DigestPostgres
import DigestRun
import DigestStore
import Foundation

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Build every user's digest for a week and enqueue one message per device.",
        discussion: """
            Without --week, a rolling run: every reader whose local week has ended (at least --grace \
            ago) and who has no digest of it yet, zone by zone; scheduled hourly it reaches each reader within \
            the hour after their local Sunday midnight, and readers or devices added later get the week's \
            digest in the next run. Messages are due at --deliver-at in the reader's zone (Monday 09:00), or, \
            when that has passed, at the next moment outside --quiet-hours. With --week, one week for every \
            reader whose local week has ended. A rerun enqueues nothing twice, a killed run resumes where it \
            stopped, and a run that finds another holding the SQLite lock says so and exits 0. On PostgreSQL \
            any number of processes on any number of machines share the work: each claims chunks of users \
            (a zone's readers in rolling runs) under a lease, and a chunk whose process died is claimed again \
            when its lease ends (--status shows the chunks).
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var options: RunOptions

    @Flag(help: "Show where the week's runs stand (PostgreSQL: chunks done, claimed and left), and exit.")
    var status = false

    @Option(help: "PostgreSQL: users per chunk, when this process is the first of the week.")
    var chunkSize = 1000

    @Option(help: "PostgreSQL: seconds a chunk's claim lasts without renewal (renewed every third).")
    var lease = 60.0

    @Option(help: "PostgreSQL: this worker's name in leases (default host:pid:random).")
    var worker: String?

    @Option(
        help: """
            After the run, prune as `digest queue prune --older-than` does: messages settled longer ago than this \
            (e.g. 8w; at least 28d), old weeks' picks, and with --attachments the files no live message links to.
            """)
    var retain: String?

    func validate() throws {
        guard chunkSize > 0 else { throw ValidationError("--chunk-size must be positive") }
        guard lease >= 1 else { throw ValidationError("--lease must be at least 1 second") }
    }

    func run() async throws {
        try await runAll()
    }

    private func runAll() async throws {
        var settings = PostgresRunCoordination.Settings()
        settings.chunkSize = chunkSize
        settings.lease = .milliseconds(Int64(lease * 1000))
        if let worker { settings.worker = worker }
        let retention = try retain.map { try RetentionJob.retention($0, option: "--retain") }
        try await database.withStore(run: settings) { store in
            if status { return try await Self.printStatus(of: store, week: options.week) }
            try await run(on: store, retention: retention)
        }
    }

    /// `--status`: where each week's run stands.
    private static func printStatus(of store: any DigestDatabase, week: String?) async throws {
        let week = try week.map { try ISOWeek(parsing: $0) }
        let runs = try await store.runStatus(week: week)
        if runs.isEmpty { print("no runs\(week.map { " of \($0)" } ?? "")") }
        for run in runs {
            print(run.line)
            if let timings = try? await store.readersByTiming(week: run.week), !timings.isEmpty {
                print("  delivery timing (readers in the outbox): " + timings.map { "\($0.timing) \($0.readers)" }.joined(separator: ", "))
            }
            guard let zones = try? await store.zoneProgress(week: try ISOWeek(parsing: run.week)), !zones.isEmpty else { continue }
            for line in ZoneProgress.lines(zones) { print("  " + line) }
        }
    }

    /// The run (rolling, or `--week`'s), then `--retain`'s pruning.
    private func run(on store: any DigestDatabase, retention: OutboxRetention?) async throws {
        do {
            let summaries = try await options.executeAll(database: store)
            for (index, summary) in summaries.enumerated() {
                if index > 0 { print("") }
                for line in summary.lines() { print(line) }
            }
            if summaries.isEmpty { print("no zone has ended a week that is still to do: nothing to do") }
            if let retention {
                let now = Int64(options.instant(now: Date()).timeIntervalSince1970)
                print(try await RetentionJob(retention: retention, attachments: options.attachments).run(on: store, now: now).line)
            }
        } catch let error as RunLockError where error.isHeld && options.week == nil {
            // Rolling runs overlap by design: the next hour picks up what this one would have done.
            print("another digest run holds the lock on \(error.path.dropLast(5)): leaving this hour's work to it")
        }
    }
}

/// The options of `digest run`, shared with `digest demo`.
struct RunOptions: ParsableArguments {
    @Option(help: "The ISO week, e.g. 2026-W47 (default: a rolling run of every week that has ended in some zone).")
    var week: String?

    @Option(help: "The run's instant, RFC 3339 (default: now): for backfills, tests and replays.")
    var asOf: String?

    @Option(help: "Rolling runs: wait this long after a zone's week ended for late reads, e.g. 30m, 2h.")
    var grace: String = "0"

    @Option(help: "When messages become due: 'local' (--deliver-at in each user's zone, outside --quiet-hours) or 'now' (at once, no quiet hours).")
    var sendAt: String = "local"


    @OptionGroup var plan: PlanOptions

    @Option(help: "Users per batch (one outbox transaction each).")
    var batchSize: Int = 1000

    @Option(help: "Batches computed at once (default: the number of cores).")
    var concurrency: Int?

    @Option(help: "Seconds between progress lines when not on a terminal (0: every batch).")
    var progressInterval: Double = 5

    @Option(help: "Write the summary as JSON to this file.")
    var report: String?

    @Flag(help: "Run even if the week has no reads at all.")
    var allowEmptyWeek = false

    @Option(help: "Directory for image renditions (<hash>.<ext>); turns on the Image variant.")
    var attachments: String?

    @Option(help: "Public base URL the attachments directory is served under (needed with --attachments).")
    var attachmentsUrl: String?

    @Option(help: "Comma-separated addresses or CIDR ranges the image downloader may reach although internal, e.g. 127.0.0.1.")
    var allowHosts: String?

    func validate() throws {
        guard ["local", "now"].contains(sendAt) else { throw ValidationError("--send-at takes 'local' or 'now'") }
        guard batchSize > 0 else { throw ValidationError("--batch-size must be positive") }
        if let concurrency, concurrency < 1 { throw ValidationError("--concurrency must be positive") }
        if let week { _ = try ISOWeek(parsing: week) }
        if let asOf, Timestamp.parse(asOf) == nil {
            throw ValidationError("--as-of '\(asOf)' is not an RFC 3339 instant like 2026-11-23T05:00:00Z")
        }
        guard let grace = Self.seconds(grace), grace >= 0 else {
            throw ValidationError("--grace '\(grace)' is not a duration like 30m, 2h or 90s")
        }
        if attachments != nil, attachmentsUrl == nil {
            throw ValidationError("--attachments needs --attachments-url (the public URL the directory is served under)")
        }
        if attachmentsUrl != nil, attachments == nil { throw ValidationError("--attachments-url needs --attachments") }
        try PictureOptions.validate(allowHosts: allowHosts)
    }


    /// `30m`, `2h`, `90s`, `1d` or plain seconds.
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last.flatMap({ units[$0] }) {
            return Int64(text.dropLast()).map { $0 * unit }
        }
        return Int64(text)
    }

    /// The run's instant: `--as-of`, else `now`.
    func instant(now: Date) -> Date {
        asOf.flatMap(Timestamp.parse).map { Date(timeIntervalSince1970: Double($0)) } ?? now
    }

    /// A rolling run (every store walks users by zone) when no --week is given, or when the --week has
    /// not ended in every zone yet (its readers whose local week has ended); otherwise the week's run.
    func executeAll(database: any DigestDatabase, now: Date = Date()) async throws -> [RunSummary] {
        let instant = instant(now: now)
        let only = try week.map { try ISOWeek(parsing: $0) }
        guard only.map({ $0 > WeekCalendar.latestCompleteWeek(now: instant) }) ?? true else {
            return [try await execute(database: database, now: now)]
        }
        let seconds = Int64(instant.timeIntervalSince1970)
        if let only, only > RollingRun.latestEndedWeek(at: seconds) {
            throw RunError(
                "week \(only) has not ended in any time zone yet at \(Timestamp.format(seconds)); the latest week ended somewhere is \(RollingRun.latestEndedWeek(at: seconds))")
        }
        let catalog = try plan.catalog()
        let configuration = try configuration(week: RollingRun.latestEndedWeek(at: Int64(instant.timeIntervalSince1970)))
        let grace = Self.seconds(grace) ?? 0
        let summaries = try await PictureOptions.withProvider(directory: attachments, baseURL: attachmentsUrl, allowHosts: allowHosts) {
            provider in
            try await rolling(
                database: database, catalog: catalog, attachments: provider, configuration: configuration, now: instant, grace: grace,
                only: only)
        }
        try write(report: summaries)
        return summaries
    }

    private func rolling<Database: DigestDatabase>(
        database: Database, catalog: TemplateCatalog, attachments: any AttachmentProvider,
        configuration: WeeklyRunConfiguration, now: Date, grace: Int64, only: ISOWeek?
    ) async throws -> [RunSummary] {
        let run = WeeklyRun(database: database, templates: catalog, attachments: attachments, configuration: configuration)
        let printer = ProgressPrinter(interval: progressInterval)
        let summaries = try await run.runRolling(now: now, grace: grace, only: only) { printer.report($0) }
        printer.finish()
        return summaries
    }

    /// `--report`: the summary (a rolling run's: one a week) as JSON.
    private func write(report value: some Encodable) throws {
        guard let report else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(value).write(to: URL(fileURLWithPath: report))
    }

    /// The run configuration of these options for `week`.
    func configuration(week: ISOWeek) throws -> WeeklyRunConfiguration {
        var configuration = try plan.configuration(week: week)
        configuration.sendAt = sendAt == "now" ? .now : .local
        configuration.batchSize = batchSize
        if let concurrency { configuration.concurrency = concurrency }
        configuration.allowEmptyWeek = allowEmptyWeek
        return configuration
    }

    func execute(database: any DigestDatabase, now: Date = Date()) async throws -> RunSummary {
        let now = instant(now: now)
        let week = try self.week.map { try ISOWeek(parsing: $0) } ?? WeekCalendar.latestCompleteWeek(now: now)
        let catalog = try plan.catalog()
        let configuration = try configuration(week: week)
        let summary = try await PictureOptions.withProvider(directory: attachments, baseURL: attachmentsUrl, allowHosts: allowHosts) {
            provider in
            try await runWeek(database: database, catalog: catalog, attachments: provider, configuration: configuration, now: now)
        }
        try write(report: summary)
        return summary
    }

    private func runWeek<Database: DigestDatabase>(
        database: Database, catalog: TemplateCatalog, attachments: any AttachmentProvider,
        configuration: WeeklyRunConfiguration, now: Date
    ) async throws -> RunSummary {
        let run = WeeklyRun(database: database, templates: catalog, attachments: attachments, configuration: configuration)
        let printer = ProgressPrinter(interval: progressInterval)
        let summary = try await run.run(now: now) { printer.report($0) }
        printer.finish()
        return summary
    }
}

/// What shapes a message: templates, variant policy, byte budget, link. Shared by `run`, `demo`,
/// `preview` and `serve`, so a preview plans exactly as the run does.
struct PlanOptions: ParsableArguments {
    @Option(help: "The Templates/ directory (default: ./Templates or the one beside the program).")
    var templates: String?

    @Option(help: "Variant policy: image, text or split:PERCENT (A/B by user and week).")
    var policy: String = "image"

    @Option(help: "Byte budget per platform section (capped at 4096; web 3993).")
    var byteBudget: Int = 3800

    @Option(help: "The https page of a week: BigText and Default messages open <link-base>/<week>; Image messages open the top pick's own https URL (this page when it has none).")
    var linkBase: String = "https://digest.example/weekly"

    @Option(help: "Weeks without a read (the digest's week and those before it) after which a reader is dormant and gets no digest; 0: never.")
    var dormantAfter: Int = 4

    @Option(
        help: """
            Local delivery time in the week after the digest's week: 09:00 (Monday) or e.g. 'tue 10:30'; or 'habit' \
            (each reader's reading hour on that day, the time after the comma for readers without one: habit,09:00).
            """)
    var deliverAt: String = "09:00"

    @Option(help: "With --deliver-at habit: the percent of readers kept at the fallback time as a control group (stable by reader and year).")
    var holdout: Int = 0

    @Option(help: "Local hours in which no message becomes due or is sent, e.g. 21:00-08:00, or off.")
    var quietHours: String = "21:00-08:00"

    @Option(help: """
        The buttons, in order, from open, later, fewer, pause, off (default: open,later; open,fewer,pause \
        with --reply-key-file). fewer, pause and off need --reply-key-file.
        """)
    var actions: String?

    @Option(help: "Secrets that sign each message's reply_key, one a line: the first signs, every one verifies.")
    var replyKeyFile: String?

    @Option(help: "The iOS notification category (aps.category) the app registers the buttons under.")
    var iosCategory: String = "digest"

    @Option(help: "iOS aps.interruption-level: passive (into the notification summary, no sound) or active (default: no key).")
    var iosInterruptionLevel: String?

    func validate() throws {
        _ = try deliverySettings()
        _ = try actionIDs()
        _ = try replyKeys()
        guard !iosCategory.isEmpty else { throw ValidationError("--ios-category must not be empty") }
        if let level = iosInterruptionLevel, !["passive", "active"].contains(level) {
            throw ValidationError("--ios-interruption-level takes passive or active")
        }
        guard (0...52).contains(dormantAfter) else { throw ValidationError("--dormant-after must be 0…52 weeks") }
        guard VariantPolicy(argument: policy) != nil else {
            throw ValidationError("--policy takes image, text or split:PERCENT (0-100)")
        }
        guard (256...4096).contains(byteBudget) else { throw ValidationError("--byte-budget must be 256…4096") }
        guard linkBase.hasPrefix("https://") else { throw ValidationError("--link-base must be an https URL") }
    }

    /// `--actions`, or its default; a button that changes preferences needs `--reply-key-file`.
    func actionIDs() throws -> [NotificationActionID] {
        guard let actions else { return NotificationActionID.defaults(replyKeys: replyKeyFile != nil) }
        let ids: [NotificationActionID]
        do {
            ids = try NotificationActionID.parse(actions)
        } catch {
            throw ValidationError("--actions: \(error.description)")
        }
        if replyKeyFile == nil, let id = ids.first(where: \.needsReplyKey) {
            throw ValidationError("--actions \(id.rawValue) needs --reply-key-file (a press changes the reader's preferences only with its message's reply_key)")
        }
        return ids
    }

    /// `--reply-key-file`'s secrets, if given.
    func replyKeys() throws -> ReplyKeys? {
        guard let replyKeyFile else { return nil }
        do {
            return try ReplyKeys(path: replyKeyFile)
        } catch {
            throw ValidationError("--reply-key-file \(error.message)")
        }
    }

    func templatesDirectory() throws -> URL { try TemplateLocator.locate(templates) }

    func catalog() throws -> TemplateCatalog { try TemplateCatalog(directory: try templatesDirectory()) }

    /// `--deliver-at`, `--holdout` and `--quiet-hours`, checked against each other: the delivery time
    /// (habit timing's fallback), habit timing if asked for, and the quiet hours.
    func deliverySettings() throws -> (WeekCalendar.DeliveryTime, HabitDelivery?, QuietHours?) {
        do {
            let deliverAt = try DeliverAt.parse(self.deliverAt)
            let delivery = deliverAt.fallback
            let quiet = try QuietHours.parse(quietHours)
            if let quiet, quiet.contains(minuteOfDay: delivery.hour * 60 + delivery.minute) {
                throw ValidationError("--deliver-at \(self.deliverAt) falls inside --quiet-hours \(quiet): pick a time outside them")
            }
            guard let control = ControlGroup(percent: holdout) else { throw ValidationError("--holdout takes a percent, 0…100") }
            guard case .habit = deliverAt else {
                if holdout != 0 { throw ValidationError("--holdout \(holdout) needs --deliver-at habit (a control group of what?)") }
                return (delivery, nil, quiet)
            }
            return (delivery, HabitDelivery(control: control.percent > 0 ? control : nil), quiet)
        } catch let error as DeliveryOptionError {
            throw ValidationError(error.description)
        }
    }

    /// The run configuration these options give for `week` (run-only settings at their defaults).
    func configuration(week: ISOWeek) throws -> WeeklyRunConfiguration {
        var configuration = WeeklyRunConfiguration(week: week)
        configuration.planner.policy = VariantPolicy(argument: policy)!
        configuration.planner.byteBudget = byteBudget
        configuration.encoder.linkBase = linkBase.hasSuffix("/") ? String(linkBase.dropLast()) : linkBase
        configuration.digest.dormantAfterWeeks = dormantAfter
        configuration.planner.actions = try actionIDs()
        configuration.compose.replyKeys = try replyKeys()
        configuration.encoder.apnsCategory = iosCategory
        configuration.encoder.iosInterruptionLevel = iosInterruptionLevel
        let (delivery, habit, quiet) = try deliverySettings()
        configuration.delivery = delivery
        configuration.compose.habit = habit
        configuration.compose.quietHours = quiet
        return configuration
    }
}
