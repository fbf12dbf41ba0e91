import ArgumentParser
import DigestCore
import DigestImageCodecs
import DigestImages
import DigestPreview
import DigestRun
import DigestServer
import DigestStore
import Foundation

struct PreviewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Render what devices will show for a user's message (or any FCM v1 body or APNs message) as PNG files.",
        discussion: """
            With --db and --user, previews the user's messages for the week: the ones in the outbox when a \
            run enqueued them, else composed now exactly as a run would (--source picks one). With --message, \
            previews any FCM v1 request body (for example one from `digest queue peek --show-tokens`) or direct \
            APNs message: its payload alone ({"aps":…}) or {"headers":{…},"payload":{…}}, drawn as the apns \
            section of an FCM body is. Writes \
            <platform>-<state>.png per surface and preview.json with the rules that fired, the bytes per \
            budget and each surface's visible lines. Previews never download: pictures are read from \
            --attachments when their URL starts with --attachments-url, else drawn as "image not readable".

            With --compare OLD_DIR, composes the week's messages of every reader (or a --sample, or the \
            --users of a file) with OLD_DIR and with --templates (the run's templates by default) on the run's \
            own code path, and writes index.html and compare.json to --out: the messages that changed, by \
            locale, variant and platform, variant switches, texts newly cut, budgets newly exceeded and rules \
            fired differently, and each changed message's old and new PNGs side by side. Unchanged messages \
            are counted, not drawn.
            """)

    @Option(help: "The database: a SQLite file path or a postgres:// URL.") var db: String?
    @Option(help: "The user's id.") var user: String?
    @Option(help: "A file holding one FCM v1 request body, or one APNs payload ({\"aps\":…}) or {\"headers\":…,\"payload\":…}.") var message: String?
    @Option(help: "The ISO week (default: the latest complete week).") var week: String?
    @Option(help: "Platforms to render, comma-separated (android,ios,web).") var platform: String?
    @Option(help: "outbox, computed, or auto (the outbox when it has the week's messages).") var source: String = "auto"
    @Option(help: "Where the PNG files and preview.json go.") var out: String
    @Option(help: "Pixels per dp/pt: 1, 2 or 3.") var scale: Int = 3
    @Option(help: "The templates folder to compare --templates (the new one) with: every changed message drawn old beside new.")
    var compare: String?
    @Option(help: "With --compare: a stable sample of about N readers (at least one per locale and variant), else every reader.")
    var sample: Int?
    @Option(name: .customLong("users"), help: "With --compare: a file of the user ids to compare, one a line.")
    var usersFile: String?
    @OptionGroup var pictures: PictureOptions
    @OptionGroup var plan: PlanOptions

    func validate() throws {
        guard (1...3).contains(scale) else { throw ValidationError("--scale takes 1, 2 or 3") }
        guard ["auto", "outbox", "computed"].contains(source) else {
            throw ValidationError("--source takes auto, outbox or computed")
        }
        if compare != nil {
            guard db != nil, user == nil, message == nil else {
                throw ValidationError("--compare takes --db and no --user or --message: it compares many readers")
            }
            guard sample == nil || usersFile == nil else { throw ValidationError("give --sample or --users, not both") }
            guard platform == nil else {
                throw ValidationError("--platform does not go with --compare: every platform's changed messages are compared and drawn (compare.json names each one's platform)")
            }
            if let sample, sample < 1 { throw ValidationError("--sample takes a number of readers, at least 1") }
        } else {
            guard sample == nil, usersFile == nil else { throw ValidationError("--sample and --users go with --compare OLD_DIR") }
            switch (db, user, message) {
            case (.some, .some, nil), (nil, nil, .some): break
            default: throw ValidationError("give --db and --user, or --message FILE, or --db and --compare OLD_DIR")
            }
        }
        _ = try platforms()
        if let week { _ = try ISOWeek(parsing: week) }
    }

    func platforms() throws -> Set<Platform>? {
        guard let platform else { return nil }
        var result = Set<Platform>()
        for name in platform.split(separator: ",") {
            guard let value = Platform(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--platform takes android, ios and web (comma-separated), not '\(name)'")
            }
            result.insert(value)
        }
        return result
    }

    func run() async throws {
        let missing = PreviewRenderer.missingFonts()
        if !missing.isEmpty {
            printError("warning: fonts missing (\(missing.joined(separator: ", "))): previews use fallbacks; run scripts/setup.sh as root")
        }
        // A comparison draws many messages: a renderer per core, up to four.
        let threads = compare == nil ? 1 : min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))
        let pool = PreviewPool(threads: threads, configuration: pictures.configuration(allowFileURLs: true))
        defer { pool.shutdown() }
        let outURL = URL(fileURLWithPath: out)
        if let compare, let db {
            try await self.compare(db: db, old: compare, pool: pool, to: outURL)
            return
        }
        let written: PreviewFiles
        if let message {
            let bytes: [UInt8]
            do {
                bytes = Array(try Data(contentsOf: URL(fileURLWithPath: message)))
            } catch {
                throw CommandError("\(message): cannot read: \(error.localizedDescription)")
            }
            written = try await PreviewFiles.write(
                messages: [bytes], sidecar: PreviewSidecar(source: "file"), budget: plan.byteBudget, platforms: try platforms(),
                scale: scale, pool: pool, to: outURL)
        } else {
            guard let db, let user else { return }
            let week = try self.week.map { try ISOWeek(parsing: $0) } ?? WeekCalendar.latestCompleteWeek(now: Date())
            let templates = try plan.catalog(), configuration = try plan.configuration(week: week).compose, source = self.source
            let found = try await DatabaseOptions.withStore(db, existing: true) { store in
                try await pictures.withProvider { attachments in
                    try await Self.messages(
                        store, templates: templates, attachments: attachments, configuration: configuration, user: user,
                        source: UserMessages.Source(rawValue: source))
                }
            }
            guard let messages = found else {
                throw CommandError("\(DatabaseOptions.displayName(db)): no user '\(user)'")
            }
            if let skipped = messages.skipped {
                throw CommandError("\(user) has no message for \(messages.week) (\(messages.source.rawValue)): \(skipped)")
            }
            written = try await PreviewFiles.write(
                messages, budget: plan.byteBudget, platforms: try platforms(), scale: scale, pool: pool, to: outURL)
        }
        for line in written.summary() { print(line) }
    }
}

extension PreviewCommand {
    /// `--compare OLD_DIR`: the comparison of the old folder with `--templates`, written into `out`.
    func compare(db: String, old: String, pool: PreviewPool, to out: URL) async throws {
        let week = try self.week.map { try ISOWeek(parsing: $0) } ?? WeekCalendar.latestCompleteWeek(now: Date())
        let oldURL = URL(fileURLWithPath: old), newURL = try plan.templatesDirectory()
        func load(_ url: URL, _ role: String) throws -> TemplateCatalog {
            do { return try TemplateCatalog(directory: url) } catch { throw CommandError("the \(role) templates (\(url.path)): \(error)") }
        }
        let oldCatalog = try load(oldURL, "old"), newCatalog = try load(newURL, "new")
        var readers = ComparedReaders.all
        if let sample { readers = .sample(sample) }
        if let usersFile {
            let text: String
            do { text = try String(contentsOfFile: usersFile, encoding: .utf8) } catch {
                throw CommandError("\(usersFile): cannot read: \(error.localizedDescription)")
            }
            readers = .ids(text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        let configuration = try plan.configuration(week: week).compose, budget = plan.byteBudget, scale = self.scale
        let output = try ComparisonFiles(directory: out, week: week.description, old: oldURL, new: newURL)
        let totals = try await DatabaseOptions.withStore(db, existing: true) { store in
            try await pictures.withProvider { attachments in
                try await Self.compare(
                    store, old: oldCatalog, new: newCatalog, attachments: attachments, configuration: configuration, readers: readers,
                    budget: budget, pool: pool, scale: scale, output: output)
            }
        }
        print(
            "compare: \(totals.readers) readers, \(totals.messages) messages, \(totals.changed) changed, \(totals.unchanged) unchanged"
                + (totals.missingUsers > 0 ? ", \(totals.missingUsers) user ids not found" : ""))
        print(
            "  variant switches \(totals.variantSwitches), newly cut \(totals.newlyCut), no longer cut \(totals.noLongerCut), "
                + "budgets newly exceeded \(totals.newlyOverBudget), rules fired differently \(totals.rulesChanged), errors \(totals.failed)")
        print(
            "  apart from the templates: \(totals.byPreferences) messages shaped by the readers' preferences, "
                + "\(totals.skippedByPreferences) readers skipped by their pace or pause")
        for group in totals.changedBy { print("  \(group.locale) \(group.variant) \(group.platform): \(group.messages) changed") }
        print("  \(out.appendingPathComponent("index.html").path), \(out.appendingPathComponent("compare.json").path)")
    }

    /// The comparison on either store.
    static func compare<Database: DigestDatabase>(
        _ database: Database, old: TemplateCatalog, new: TemplateCatalog, attachments: any AttachmentProvider,
        configuration: BatchComposer.Configuration, readers: ComparedReaders, budget: Int, pool: PreviewPool, scale: Int,
        output: ComparisonFiles
    ) async throws -> ComparisonTotals {
        let comparison = TemplateComparison(
            database: database, old: old, new: new, attachments: attachments, configuration: configuration)
        return try await comparison.run(readers, budget: budget, pool: pool, scale: scale, output: output)
    }

    /// A user's messages for the week from either store, on the run's own code path.
    static func messages<Database: DigestDatabase>(
        _ database: Database, templates: TemplateCatalog, attachments: any AttachmentProvider, configuration: BatchComposer.Configuration,
        user: String, source: UserMessages.Source?
    ) async throws -> UserMessages? {
        let composer = SingleUserComposer(database: database, templates: templates, attachments: attachments, configuration: configuration)
        return try await composer.messages(userID: user, source: source)
    }
}

/// `--attachments` and `--attachments-url`: where previews read pictures from, and (given both) the
/// run's own image pipeline for messages composed now, so that a computed preview picks the variant
/// and the picture the run would.
struct PictureOptions: ParsableArguments {
    @Option(help: "The directory holding the image renditions (the run's --attachments).") var attachments: String?
    @Option(help: "The public base URL of the renditions (the run's --attachments-url).") var attachmentsURL: String?
    @Option(help: "Addresses or CIDR ranges the image downloader may reach although internal (the run's --allow-hosts).")
    var allowHosts: String?

    func configuration(allowFileURLs: Bool) -> PreviewRenderer.Configuration {
        PreviewRenderer.Configuration(
            images: PreviewImages(attachmentsDirectory: attachments, attachmentsURL: attachmentsURL, allowFileURLs: allowFileURLs))
    }

    func validate() throws { try Self.validate(allowHosts: allowHosts) }

    /// `--allow-hosts` of `run`, `preview` and `serve`.
    static func validate(allowHosts: String?) throws {
        if let allowHosts {
            do { _ = try AddressGuard(allowList: allowHosts) } catch { throw ValidationError("--allow-hosts: \(error.message)") }
        }
    }

    /// Runs `body` with the provider a run given the same options would use: images fetched, checked
    /// and resized into `--attachments` (files named by content, so the run's own files are the same),
    /// or none without both options (image digests then fall back to text, as such a run's would).
    func withProvider<T: Sendable>(_ body: (any AttachmentProvider) async throws -> T) async throws -> T {
        try await Self.withProvider(directory: attachments, baseURL: attachmentsURL, allowHosts: allowHosts, body)
    }

    /// The run's attachment provider for `--attachments DIR --attachments-url URL [--allow-hosts LIST]`
    /// (``NoAttachments`` without the first two).
    static func withProvider<T: Sendable>(
        directory: String?, baseURL: String?, allowHosts: String?, _ body: (any AttachmentProvider) async throws -> T
    ) async throws -> T {
        guard let directory, let baseURL else { return try await body(NoAttachments()) }
        var images = ImageAttachments.Configuration(directory: URL(fileURLWithPath: directory), baseURL: baseURL)
        images.downloader.addressGuard = try AddressGuard(allowList: allowHosts ?? "")
        return try await ImageAttachments.with(images) { provider in try await body(provider) }
    }
}

/// Renders messages into a directory: one PNG per surface and state, and preview.json.
struct PreviewFiles {
    var directory: URL
    var sidecar: PreviewSidecar

    static func write(
        messages: [[UInt8]], sidecar: PreviewSidecar, budget: Int, platforms: Set<Platform>?, scale: Int,
        pool: PreviewPool, to directory: URL
    ) async throws -> PreviewFiles {
        var sidecar = sidecar
        if let platforms { sidecar.budgets.removeAll { !platforms.contains(Platform(rawValue: $0.platform) ?? .android) } }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for bytes in messages {
            let message: PreviewMessage
            do {
                message = try PreviewMessage(json: bytes)
            } catch {
                throw CommandError("the message cannot be previewed: \(error)")
            }
            if sidecar.budgets.isEmpty || sidecar.source == "file" {
                for (platform, count) in MessageBudget.bytes(ofMessage: bytes).sorted(by: { $0.key.rawValue < $1.key.rawValue })
                where !sidecar.budgets.contains(where: { $0.platform == platform.rawValue }) {
                    sidecar.budgets.append(.init(platform: platform, bytes: count, budget: budget))
                }
            }
            for preview in try await pool.render(message, platforms: platforms, scale: scale) {
                let url = directory.appendingPathComponent(preview.fileName)
                try Data(preview.png).write(to: url, options: .atomic)
                sidecar.previews.append(.init(preview, file: preview.fileName))
            }
        }
        try sidecar.json().write(to: directory.appendingPathComponent("preview.json"), options: .atomic)
        return PreviewFiles(directory: directory, sidecar: sidecar)
    }

    /// Previews of a user's messages, with the plan's rules and bytes, the reader's preferences and
    /// the candidates they left out in the sidecar.
    static func write(
        _ messages: UserMessages, budget: Int, platforms: Set<Platform>?, scale: Int, pool: PreviewPool, to directory: URL
    ) async throws -> PreviewFiles {
        try await write(
            messages: Platform.allCases.compactMap { messages.messages[$0] },
            sidecar: messages.sidecar(budget: budget),
            budget: budget, platforms: platforms, scale: scale, pool: pool, to: directory)
    }

    func summary() -> [String] {
        var lines: [String] = []
        let who = [sidecar.userID, sidecar.week, sidecar.variant].compactMap { $0 }.joined(separator: " ")
        lines.append("preview: \(who.isEmpty ? "message" : who) (\(sidecar.source)), \(sidecar.previews.count) PNG files in \(directory.path)")
        for budget in sidecar.budgets {
            lines.append("  \(budget.platform): \(budget.bytes) of \(budget.budget) bytes\(budget.overBudget ? " — over budget" : "")")
        }
        if let due = sidecar.due { lines.append("  " + due.line) }
        if !sidecar.rules.isEmpty { lines.append("  rules: \(sidecar.rules.joined(separator: ", "))") }
        for entry in sidecar.previews {
            let cut = entry.texts.filter { $0.ellipsized && ($0.role == "title" || $0.role == "body") }.map(\.role)
            var line = "  \(entry.file): \(entry.surface)"
            if !cut.isEmpty { line += ", \(cut.joined(separator: " and ")) cut with …" }
            if !entry.notes.isEmpty { line += "; notes: \(entry.notes.joined(separator: "; "))" }
            lines.append(line)
        }
        lines.append("  sidecar: \(directory.appendingPathComponent("preview.json").path)")
        return lines
    }
}
