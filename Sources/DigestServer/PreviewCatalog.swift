package import DigestCore
import DigestReport
package import DigestPreview
package import DigestStore
package import Foundation

/// What the preview pages ask for, answered from the store, the templates (read again when a file of
/// theirs changed, so an edit shows on reload) and the renderer (PNGs cached by message hash).
package struct PreviewCatalog<Database: DigestDatabase>: Sendable {
    /// How the pages plan and render.
    package struct Configuration: Sendable {
        /// The Templates/ directory, read again for a preview when a file of it changed.
        package var templatesDirectory: URL
        /// The run configuration a preview composes with for a week (templates aside).
        package var planning: @Sendable (ISOWeek) -> BatchComposer.Configuration
        /// Byte budget shown against each platform's bytes.
        package var byteBudget = 3800
        /// Pixels per point of the PNGs.
        package var scale = 3
        /// The image renditions behind the previews.
        package var attachments: any AttachmentProvider = NoAttachments()
        /// Weeks offered besides the outbox's: this many complete weeks back from the latest.
        package var recentWeeks = 8
        /// `serve --compare-templates`: the folder the page compares the templates with (read again
        /// when a file of it changed, like the templates), or `nil` for no comparison.
        package var compareTemplatesDirectory: URL?

        package init(templatesDirectory: URL, planning: @escaping @Sendable (ISOWeek) -> BatchComposer.Configuration) {
            self.templatesDirectory = templatesDirectory
            self.planning = planning
        }
    }

    package let database: Database
    package let configuration: Configuration
    let pool: PreviewPool
    let cache: PNGCache
    let templates: TemplateReloader
    /// The old folder of the page's comparison (``Configuration/compareTemplatesDirectory``).
    let oldTemplates: TemplateReloader?
    let now: @Sendable () -> Date

    package init(
        database: Database, configuration: Configuration, pool: PreviewPool, cacheEntries: Int = 600,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.configuration = configuration
        self.pool = pool
        cache = PNGCache(limit: cacheEntries)
        templates = TemplateReloader(directory: configuration.templatesDirectory)
        oldTemplates = configuration.compareTemplatesDirectory.map { TemplateReloader(directory: $0) }
        self.now = now
    }

    /// Users whose id starts with `prefix`.
    func users(prefix: String, limit: Int = 20) async throws -> [UserSummary] {
        try await database.withHistoryReader { try await $0.users(idPrefix: prefix, limit: limit) }.map { stored in
            UserSummary(
                id: stored.reader.id, locale: stored.reader.locale, timeZone: stored.reader.timeZone,
                optedOut: stored.reader.optedOut,
                platforms: Array(Set(stored.reader.devices.map(\.platform.rawValue))).sorted())
        }
    }

    /// The weeks the page offers for a user: recent complete weeks and any the outbox holds.
    func weeks(userID: String) async throws -> [String] {
        var week = WeekCalendar.latestCompleteWeek(now: now())
        var weeks: [String] = []
        for _ in 0..<configuration.recentWeeks {
            weeks.append(week.description)
            week = week.previous
        }
        weeks.append(contentsOf: try await database.outboxWeeks(userID: userID))
        return Array(Set(weeks)).sorted(by: >)
    }

    /// Every surface of the user's messages for `week`; `nil` for an unknown user.
    func preview(userID: String, week: ISOWeek, source: UserMessages.Source?) async throws -> PreviewPage? {
        // Template edits show on the next reload.
        let composer = SingleUserComposer(
            database: database, templates: try templates.catalog(), attachments: configuration.attachments,
            configuration: configuration.planning(week))
        // Without a source: the outbox's message when it holds the reader's, else composed now.
        guard let messages = try await composer.messages(userID: userID, source: source, now: now()) else {
            cache.drop(reader: userID)
            return nil
        }
        var page = PreviewPage(
            user: userID, week: messages.week, weeks: try await weeks(userID: userID), source: messages.source.rawValue,
            variant: messages.variant, skipped: messages.skipped, rules: messages.rules, budgets: [], surfaces: [], due: messages.due)
        page.compares = oldTemplates != nil
        page.preferences = messages.preferences.map(PreviewSidecar.Preferences.init)
        page.leftOut = messages.leftOut
        let outbox = try await database.outboxRows(week: messages.week, userID: userID)
        page.outbox = outbox.map {
            PreviewPage.OutboxEntry(
                platform: $0.platform.rawValue, variant: $0.variant.rawValue, state: $0.state.rawValue, messageID: $0.messageID, locale: $0.locale)
        }
        let report = DeliveryReport(
            week: messages.week, counts: try await database.eventCounts(week: messages.week),
            timing: try await database.readersByTiming(week: messages.week),
            actions: try await database.pressesByGroup(week: messages.week),
            stopped: try await database.stoppedByTiming(week: messages.week))
        page.report = report
        page.chart = report.rows.contains { $0.sent > 0 } ? ReportChart.svg(report) : nil
        for platform in Platform.allCases {
            guard let bytes = messages.messages[platform] else { continue }
            let count = messages.bytes[platform] ?? MessageBudget.bytes(ofMessage: bytes)[platform] ?? bytes.count
            page.budgets.append(PreviewSidecar.BudgetUse(platform: platform, bytes: count, budget: configuration.byteBudget))
            if messages.source == .computed, let row = outbox.first(where: { $0.platform == platform }) {
                page.outboxDiffers[platform.rawValue] = Array(row.message.utf8) != bytes
            }
            page.surfaces.append(contentsOf: try await surfaces(of: bytes, platform: platform, reader: userID))
        }
        return page
    }

    /// The surfaces of one of `reader`'s messages, rendered once per message hash.
    func surfaces(of message: [UInt8], platform: Platform, reader: String) async throws -> [PreviewPage.Surface] {
        let hash = PNGCache.key(message: message, scale: configuration.scale)
        if let cached = cache.surfaces(hash) {
            for surface in cached { cache.store(reader: reader, name: PNGCache.name(of: surface)) }
            return cached
        }
        let parsed = try PreviewMessage(json: message)
        let previews = try await pool.render(parsed, platforms: [platform], scale: configuration.scale)
        var surfaces: [PreviewPage.Surface] = []
        for preview in previews {
            let name = "\(hash)-\(preview.platform.rawValue)-\(preview.state.rawValue)"
            cache.store(png: preview.png, name: name, reader: reader)
            surfaces.append(
                PreviewPage.Surface(
                    platform: preview.platform.rawValue, state: preview.state.rawValue, surface: preview.surfaceName,
                    image: "png/\(name).png", width: preview.pixelWidth / preview.scale,
                    height: preview.pixelHeight / preview.scale, texts: preview.texts, notes: preview.notes,
                    limits: preview.limits.source))
        }
        cache.store(surfaces: surfaces, hash: hash)
        return surfaces
    }

    /// The reader's messages for `week` composed with the comparison's old folder and with the
    /// templates (``TemplateComparison``, as `digest preview --compare` does for many readers), each
    /// changed one drawn old beside new into the PNG cache; `nil` for an unknown user or without
    /// `--compare-templates`.
    func comparison(userID: String, week: ISOWeek) async throws -> ComparisonPage? {
        guard let oldTemplates, let oldDirectory = configuration.compareTemplatesDirectory else { return nil }
        let comparison = TemplateComparison(
            database: database, old: try oldTemplates.catalog(), new: try templates.catalog(), attachments: configuration.attachments,
            configuration: configuration.planning(week), now: now())
        guard let user = try await comparison.users(ids: [userID]).users.first else {
            cache.drop(reader: userID)
            return nil
        }
        let reader = try await comparison.compose([user], with: try await comparison.composers())[0]
        var page = ComparisonPage(
            week: week.description, old: oldDirectory.path, new: configuration.templatesDirectory.path, entries: [], totals: .init())
        page.totals.readers = 1
        let cache = self.cache, scale = configuration.scale
        let messages = reader.messages(budget: configuration.byteBudget)
        page.totals.addPreferences(of: reader, messages: messages)
        for message in messages {
            guard message.changed else {
                page.totals.addUnchanged()
                continue
            }
            // Named as the page's own previews are, so a message drawn by either is drawn once.
            let entry = try await ComparisonEntry.render(message, pool: pool, scale: scale) { side, preview in
                let bytes = (side == "old" ? message.old.message : message.new.message) ?? []
                let name = "\(PNGCache.key(message: bytes, scale: scale))-\(preview.platform.rawValue)-\(preview.state.rawValue)"
                cache.store(png: preview.png, name: name, reader: userID)
                return "png/\(name).png"
            }
            page.totals.add(entry)
            page.entries.append(entry)
        }
        return page
    }

    /// A cached PNG by name (`<hash>-<platform>-<state>`), while the store still holds a reader it
    /// was drawn for: the PNGs of readers it no longer holds (forgotten) are dropped, not served.
    func png(named name: String) async throws -> [UInt8]? {
        guard let png = cache.png(name) else { return nil }
        var held = false
        for reader in cache.readers(of: name) {
            if try await database.withHistoryReader({ try await $0.user(id: reader) }) != nil {
                held = true
            } else {
                cache.drop(reader: reader)
            }
        }
        return held ? png : nil
    }
}

/// One user in the search results.
struct UserSummary: Codable, Sendable {
    var id: String
    var locale: String
    var timeZone: String
    var optedOut: Bool
    var platforms: [String]
}

/// What the page shows for a user and week.
struct PreviewPage: Codable, Sendable {
    struct Surface: Codable, Sendable {
        var platform: String
        var state: String
        var surface: String
        /// Relative URL of the PNG.
        var image: String
        /// Size in CSS pixels (the PNG is `scale` times larger).
        var width: Int
        var height: Int
        var texts: [TextLines]
        var notes: [String]
        var limits: String
    }

    var user: String
    var week: String
    var weeks: [String]
    var source: String
    var variant: String?
    var skipped: String?
    var rules: [String]
    var budgets: [PreviewSidecar.BudgetUse]
    var surfaces: [Surface]
    /// When the message is (or would be) due, and why.
    var due: PreviewSidecar.Due?
    /// Per platform: whether the outbox holds a different message (enqueued with older templates).
    var outboxDiffers: [String: Bool] = [:]
    /// What the reader chose, and the best candidates that kept out of the picks (and why).
    var preferences: PreviewSidecar.Preferences?
    var leftOut: [PreviewSidecar.LeftOut] = []
    /// The reader's outbox rows for the week: what was enqueued, its state and the id its events name.
    struct OutboxEntry: Codable, Sendable {
        var platform: String
        var variant: String
        var state: String
        var messageID: String?
        var locale: String?
    }
    var outbox: [OutboxEntry] = []
    /// Whether the server compares templates (`--compare-templates`): the page then asks
    /// `/api/compare` for the reader in view.
    var compares = false
    /// The week's delivery and open figures (`digest report`), every reader's.
    var report: DeliveryReport?
    /// Their chart (`digest report --chart`), SVG; `nil` while nothing was sent.
    var chart: String?
}

/// One reader's template comparison on the page (`GET /api/compare`): compare.json's shape for them.
struct ComparisonPage: Codable, Sendable {
    var week: String
    var old: String
    var new: String
    var entries: [ComparisonEntry]
    var totals: ComparisonTotals
}
