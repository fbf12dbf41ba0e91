import ArgumentParser
import DigestCore
import DigestDemo
import DigestImageCodecs
import DigestImages
import DigestPreview
import DigestRun
import DigestSQLite
import DigestServer
import DigestStore
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Make sample data, import it into a new SQLite file and run the latest complete week.")

    @Option(help: "Where the sample, database, report and sample messages go.")
    var out: String = "demo-out"

    @Option(help: "Seed of the sample (same seed and week, same data).")
    var seed: UInt64 = 2026

    @Option(help: "Users in the sample.")
    var users: Int = 2400

    @Option(help: "Articles in the sample.")
    var articles: Int = 360

    @Option(help: "Distinct sample pictures served to the run over HTTP on 127.0.0.1 (0: no images).")
    var images: Int = 18

    @Option(help: "Percent of the iOS devices that talk to APNs directly (the others go through FCM).")
    var apnsDevices = 50

    @Option(help: "Percent of the web devices subscribed with standard Web Push (the others go through FCM).")
    var webpushDevices = 50

    @Option(help: "Where the Web Push subscriptions' endpoints point: <base>/<subscriber id> (an https URL).")
    var webpushBase = DemoWebPush.defaultBase

    @Flag(inversion: .prefixedNo, help: "Point some articles at a missing picture (a 404), to show a failure and its text fallback.")
    var brokenImage = true

    @OptionGroup var options: RunOptions

    func validate() throws {
        guard users >= 1 else { throw ValidationError("--users must be positive") }
        guard articles >= 1 else { throw ValidationError("--articles must be positive") }
        guard images >= 0 else { throw ValidationError("--images must be 0 or more") }
        guard (0...100).contains(apnsDevices) else { throw ValidationError("--apns-devices must be a percentage, 0 to 100") }
        guard (0...100).contains(webpushDevices) else { throw ValidationError("--webpush-devices must be a percentage, 0 to 100") }
        // The import takes only endpoints that are https URLs with a host.
        guard webpushBase.hasPrefix("https://"), !(URLComponents(string: webpushBase)?.host ?? "").isEmpty else {
            throw ValidationError("--webpush-base must be an https URL with a host, like \(DemoWebPush.defaultBase)")
        }
    }

    func run() async throws {
        let now = options.instant(now: Date())
        let week = try options.week.map { try ISOWeek(parsing: $0) } ?? WeekCalendar.latestCompleteWeek(now: now)
        let outURL = URL(fileURLWithPath: out)
        let fm = FileManager.default
        try fm.createDirectory(at: outURL, withIntermediateDirectories: true)
        // Sample pictures, served on loopback while the run downloads them; one missing on purpose,
        // so the summary shows a failure reason and its text fallback.
        print("pictures:  making \(images) sample pictures")
        let pictures = try SamplePictures.demo(count: images)
        let routes = LoopbackRoutes()
        for picture in pictures { routes["/images/\(picture.name)"] = .ok(picture.bytes, contentType: picture.contentType) }
        let attachmentsDirectory = outURL.appendingPathComponent("attachments")
        // A new database each time, so the demo always shows a whole run.
        let databasePath = outURL.appendingPathComponent("digest.sqlite").path
        for suffix in ["", "-wal", "-shm"] { try? fm.removeItem(atPath: databasePath + suffix) }
        try await closing(SQLiteDatabase.sqlite(path: databasePath)) { database in
            try await demo(
                database: database, week: week, now: now, outURL: outURL, pictures: pictures, routes: routes,
                attachmentsDirectory: attachmentsDirectory)
        }
    }

    /// The demo on its new database: import, run, sample messages, previews and the summary.
    private func demo(
        database: SQLiteDatabase, week: ISOWeek, now: Date, outURL: URL, pictures: [SamplePictures.Picture], routes: LoopbackRoutes,
        attachmentsDirectory: URL
    ) async throws {
        let fm = FileManager.default
        let databasePath = database.path
        let (summary, runOptions, dataDirectory) = try await LoopbackHTTPServer.serve(routes) { server in
            var dataset = DemoDataset(week: week)
            dataset.seed = seed
            dataset.users = users
            dataset.articles = articles
            dataset.percentAPNs = apnsDevices
            dataset.percentWebPush = webpushDevices
            dataset.webPushBase = String(webpushBase.reversed().drop { $0 == "/" }.reversed())
            if images > 0 {
                dataset.imageBase = server.url("/images")
                dataset.imageNames = pictures.map(\.name) + (brokenImage ? ["missing.jpg"] : [])
            }
            let dataDirectory = outURL.appendingPathComponent("data")
            print("sample:    \(users) users, \(dataset.articles) articles, \(users * dataset.readsPerUser) reads over \(dataset.weeks) weeks up to \(week), seed \(seed)")
            let files = try dataset.write(to: dataDirectory)

            let plan: [(ImportKind, String)] = [.users, .articles, .reads].compactMap { kind in files[kind].map { (kind, $0) } }
            for summary in try await Importing.run(plan, database: database, strict: true, quiet: true) {
                print(Importing.line(summary))
            }

            var runOptions = options
            runOptions.week = week.description
            if runOptions.report == nil { runOptions.report = outURL.appendingPathComponent("report.json").path }
            if images > 0, runOptions.attachments == nil {
                runOptions.attachments = attachmentsDirectory.path
                runOptions.attachmentsUrl = runOptions.attachmentsUrl ?? attachmentsDirectory.absoluteURL.absoluteString
                runOptions.allowHosts = runOptions.allowHosts ?? "127.0.0.1"
            }
            print("images:    served at \(server.url("/images/")), allowed hosts: \(runOptions.allowHosts ?? "none")")
            let summary = try await runOptions.execute(database: database, now: now)
            return (summary, runOptions, dataDirectory)
        }
        for line in summary.lines() { print(line) }
        if images > 0 {
            let hits = routes.hits
            print("served:    \(hits.values.reduce(0, +)) requests for \(hits.count) distinct pictures on 127.0.0.1")
        }

        // One sample message per variant, platform and provider, for a look at the real payloads.
        let samples = outURL.appendingPathComponent("messages")
        try fm.createDirectory(at: samples, withIntermediateDirectories: true)
        var written: [String] = []
        let rows = try await database.peek(limit: 5000, state: nil)
        for row in rows {
            let name = "\(row.variant.rawValue)-\(row.platform.rawValue)\(row.provider == .fcm ? "" : "-\(row.provider.rawValue)").json"
            guard !written.contains(name) else { continue }
            try Data(row.message.utf8).write(to: samples.appendingPathComponent(name))
            written.append(name)
        }
        let previews = try await writePreviews(
            database: database, week: week, to: outURL.appendingPathComponent("previews"),
            images: PreviewImages(
                attachmentsDirectory: runOptions.attachments, attachmentsURL: runOptions.attachmentsUrl, allowFileURLs: true))

        // A sample title and body per locale of the templates, so each language's text shows at a glance.
        let catalog = try options.plan.catalog()
        let samplesByLocale = try await localeSamples(rows, database: database, catalog: catalog)
        print("locales:   a sample message per locale of the templates (title — body)")
        for locale in catalog.locales {
            if let sample = samplesByLocale[locale] {
                print("  \(locale): \(sample)")
            } else {
                print("  \(locale): no message (no reader of this locale got one)")
            }
        }

        print("")
        print("data:      \(dataDirectory.path)/{users,articles,reads}.jsonl")
        print("database:  \(databasePath)")
        print("report:    \(runOptions.report ?? "")")
        print("messages:  \(samples.path)/ (\(written.sorted().joined(separator: ", ")))")
        print("previews:  \(outURL.appendingPathComponent("previews").path)/<user>/ (\(previews.joined(separator: ", ")))")
        if let attachments = runOptions.attachments {
            let files = (try? fm.contentsOfDirectory(atPath: attachments).filter { !$0.hasPrefix(".") }) ?? []
            print("images:    \(attachments)/ (\(files.count) files, linked as \(runOptions.attachmentsUrl ?? "")/<file>)")
        }
        print("next:      digest queue stats --db \(databasePath)")
        print("           digest serve --db \(databasePath)")
    }

    /// For each locale folder of `catalog`, `title — body` of the first message (in outbox order) of a
    /// reader whose locale resolves to it (not one that fell back to the root locale) whose picks are
    /// all in the locale's language (a reader of one language; else the first message of the locale),
    /// read from the message's own platform section; a body's lines are joined with " / ".
    func localeSamples(_ rows: [OutboxRow], database: SQLiteDatabase, catalog: TemplateCatalog) async throws -> [String: String] {
        let wanted = Set(catalog.locales)
        var samples: [String: String] = [:]
        var firsts: [String: String] = [:]
        var localeOf: [String: String] = [:]  // user id → the locale folder of their templates ("": none)
        try await database.withHistoryReader { history in
            var languageOf: [String: String] = [:]
            for article in try await history.articles(publishedFrom: 0, until: Int64.max) {
                languageOf[article.id] = article.language.flatMap(LanguageTag.primary)
            }
            for row in rows where samples.count < wanted.count {
                if localeOf[row.userID] == nil {
                    let templates = try await history.user(id: row.userID).map { catalog.localized(for: $0.reader.locale) }
                    localeOf[row.userID] = templates.map { $0.fellBackToRoot ? "" : $0.resolved } ?? ""
                }
                guard let locale = localeOf[row.userID], wanted.contains(locale), samples[locale] == nil,
                    let content = try? PreviewMessage(json: Array(row.message.utf8)).contents.first,
                    let title = content.title, let body = content.body
                else { continue }
                let sample = "\(title) — \(body.replacingOccurrences(of: "\n", with: " / "))"
                if firsts[locale] == nil { firsts[locale] = sample }
                let report = try? JSONSerialization.jsonObject(with: Data(row.report.utf8)) as? [String: Any]
                let picks = report?["picks"] as? [String] ?? []
                let own = LanguageTag.primary(locale)
                if picks.allSatisfy({ languageOf[$0] == nil || languageOf[$0] == own }) { samples[locale] = sample }
            }
        }
        return samples.merging(firsts) { sample, _ in sample }
    }

    /// Previews of a handful of users from the outbox: every variant, platform and language the run
    /// produced, at most six users. Returns their ids.
    func writePreviews(database: SQLiteDatabase, week: ISOWeek, to directory: URL, images: PreviewImages) async throws -> [String] {
        var chosen: [String] = []
        var covered = Set<String>()
        let rows = try await database.peek(limit: 5000, state: nil)
        try await database.withHistoryReader { history in
            for row in rows where chosen.count < 6 && !chosen.contains(row.userID) {
                let language = try await history.user(id: row.userID)?.reader.locale.split(separator: "-").first.map(String.init) ?? ""
                let kinds = ["variant:\(row.variant.rawValue)", "platform:\(row.platform.rawValue)", "language:\(language)"]
                guard kinds.contains(where: { !covered.contains($0) }) else { continue }
                covered.formUnion(kinds)
                chosen.append(row.userID)
            }
        }
        let missing = PreviewRenderer.missingFonts()
        if !missing.isEmpty { printError("warning: fonts missing (\(missing.joined(separator: ", "))): previews use fallbacks") }
        // The renditions the run just made, read from disk as the devices would download them.
        let pool = PreviewPool(threads: 2, configuration: PreviewRenderer.Configuration(images: images))
        defer { pool.shutdown() }
        let composer = SingleUserComposer(
            database: database, templates: try options.plan.catalog(), configuration: try options.plan.configuration(week: week).compose)
        for user in chosen {
            guard let messages = try await composer.messages(userID: user, source: .outbox) else { continue }
            _ = try await PreviewFiles.write(
                messages, budget: options.plan.byteBudget, platforms: nil, scale: 3, pool: pool,
                to: directory.appendingPathComponent(user))
        }
        return chosen
    }
}
