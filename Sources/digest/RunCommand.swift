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
            Without --week, runs the latest ISO week that has ended in every time zone. Safe to start from \
            cron at any hour: a rerun enqueues nothing twice, a killed run resumes where it stopped, and a \
            second run on the same SQLite file is refused while one is going. On PostgreSQL any number of \
            processes on any number of machines share the week: each claims chunks of users under a lease, \
            and a chunk whose process died is claimed again when its lease ends (--status shows the chunks).
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

    func validate() throws {
        guard chunkSize > 0 else { throw ValidationError("--chunk-size must be positive") }
        guard lease >= 1 else { throw ValidationError("--lease must be at least 1 second") }
    }

    func run() async throws {
        var settings = PostgresRunCoordination.Settings()
        settings.chunkSize = chunkSize
        settings.lease = .milliseconds(Int64(lease * 1000))
        if let worker { settings.worker = worker }
        let store = try database.open(run: settings)
        if status {
            let week = try options.week.map { try ISOWeek(parsing: $0) }
            let runs = try await store.runStatus(week: week)
            if runs.isEmpty { print("no runs\(week.map { " of \($0)" } ?? "")") }
            for run in runs { print(run.line) }
            return
        }
        let summary = try await options.execute(database: store)
        for line in summary.lines() { print(line) }
    }
}

/// The options of `digest run`, shared with `digest demo`.
struct RunOptions: ParsableArguments {
    @Option(help: "The ISO week, e.g. 2026-W47 (default: the latest complete week).")
    var week: String?

    @Option(help: "When messages become due: 'local' (the Monday after, 09:00 in each user's zone) or 'now'.")
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
        if attachments != nil, attachmentsUrl == nil {
            throw ValidationError("--attachments needs --attachments-url (the public URL the directory is served under)")
        }
        if attachmentsUrl != nil, attachments == nil { throw ValidationError("--attachments-url needs --attachments") }
        try PictureOptions.validate(allowHosts: allowHosts)
    }

    func execute(database: any DigestDatabase, now: Date = Date()) async throws -> RunSummary {
        let week = try self.week.map { try ISOWeek(parsing: $0) } ?? WeekCalendar.latestCompleteWeek(now: now)
        let catalog = try plan.catalog()
        var configuration = plan.configuration(week: week)
        configuration.sendAt = sendAt == "now" ? .now : .local
        configuration.batchSize = batchSize
        if let concurrency { configuration.concurrency = concurrency }
        configuration.allowEmptyWeek = allowEmptyWeek
        let summary = try await PictureOptions.withProvider(directory: attachments, baseURL: attachmentsUrl, allowHosts: allowHosts) {
            provider in
            try await runWeek(database: database, catalog: catalog, attachments: provider, configuration: configuration, now: now)
        }
        if let report {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(summary).write(to: URL(fileURLWithPath: report))
        }
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

    func validate() throws {
        guard (0...52).contains(dormantAfter) else { throw ValidationError("--dormant-after must be 0…52 weeks") }
        guard VariantPolicy(argument: policy) != nil else {
            throw ValidationError("--policy takes image, text or split:PERCENT (0-100)")
        }
        guard (256...4096).contains(byteBudget) else { throw ValidationError("--byte-budget must be 256…4096") }
        guard linkBase.hasPrefix("https://") else { throw ValidationError("--link-base must be an https URL") }
    }

    func templatesDirectory() throws -> URL { try TemplateLocator.locate(templates) }

    func catalog() throws -> TemplateCatalog { try TemplateCatalog(directory: try templatesDirectory()) }

    /// The run configuration these options give for `week` (run-only settings at their defaults).
    func configuration(week: ISOWeek) -> WeeklyRunConfiguration {
        var configuration = WeeklyRunConfiguration(week: week)
        configuration.planner.policy = VariantPolicy(argument: policy)!
        configuration.planner.byteBudget = byteBudget
        configuration.encoder.linkBase = linkBase.hasSuffix("/") ? String(linkBase.dropLast()) : linkBase
        configuration.digest.dormantAfterWeeks = dormantAfter
        return configuration
    }
}
