package import DigestCore
package import DigestPreview
package import DigestStore
package import Foundation

/// Composes one user's messages for a week exactly as the weekly run would enqueue them (the same
/// article window and ``BatchComposer``: digest builder, templates, planner and encoder), without
/// writing anything. The previews use it to show what a run would send.
///
/// ```swift
/// let composer = SingleUserComposer(database: SQLiteDatabase(path: "digest.sqlite"), templates: catalog,
///                                   configuration: .init(week: week))
/// let user = try await composer.compose(userID: "u42")
/// ```
package struct SingleUserComposer<Database: DigestDatabase>: Sendable {
    package let database: Database
    package let templates: TemplateCatalog
    package let attachments: any AttachmentProvider
    package let configuration: BatchComposer.Configuration

    package init(
        database: Database, templates: TemplateCatalog, attachments: any AttachmentProvider = NoAttachments(),
        configuration: BatchComposer.Configuration
    ) {
        self.database = database
        self.templates = templates
        self.attachments = attachments
        self.configuration = configuration
    }

    /// The user's composition, or `nil` when there is no user with that id; with `devices`, composed
    /// for those devices instead of the user's own (a test send to an editor's device).
    package func compose(userID: String, devices: [Device]? = nil, now: Date = Date()) async throws -> ComposedUser? {
        try await composeExplained(userID: userID, devices: devices, now: now)?.user
    }

    /// ``compose(userID:devices:now:)`` with the candidates the reader's preferences left out of the
    /// picks and why (``LeftOutCandidate``), for the previews.
    package func composeExplained(
        userID: String, devices: [Device]? = nil, now: Date = Date()
    ) async throws -> (user: ComposedUser, leftOut: [LeftOutCandidate])? {
        let configuration = self.configuration, templates = self.templates, attachments = self.attachments
        let found: (StoredReader, ReaderHistory, BatchComposer)? = try await database.withHistoryReader { history in
            guard let stored = try await history.user(id: userID) else { return nil }
            let range = configuration.articleRange
            let articles = try await history.articles(publishedFrom: range.from, until: range.until)
            let composer = BatchComposer(
                configuration: configuration, articles: articles, templates: templates, attachments: attachments,
                now: Int64(now.timeIntervalSince1970))
            let history = try await history.histories(of: [stored], for: composer).first ?? ReaderHistory(reads: [])
            return (stored, history, composer)
        }
        guard let (stored, history, composer) = found else { return nil }
        var reader = stored.reader
        if let devices { reader.devices = devices }
        let user = await composer.composeUser(reader, history: history)
        return (user, composer.leftOut(user, history: history))
    }
}

/// One user's messages for a week, one per platform, with the plan's report: either as the outbox
/// holds them or as a run would compose them now.
package struct UserMessages: Sendable {
    /// Where the messages came from.
    package enum Source: String, Sendable, CaseIterable {
        /// The rows a run enqueued (what the sender will deliver).
        case outbox
        /// Composed now with the current templates (what a run would enqueue).
        case computed
    }

    package var source: Source
    package var userID: String
    package var week: String
    package var variant: String?
    package var rules: [String]
    /// Bytes per platform budget, as the planner counted them.
    package var bytes: [Platform: Int]
    /// One FCM v1 request body per platform the user has a device on.
    package var messages: [Platform: [UInt8]]
    /// Why the run skips this user (a ``SkipReason``'s name, or `not_in_outbox`), if it does.
    package var skipped: String?
    /// When the messages are (or would be) due, and why.
    package var due: PreviewSidecar.Due?
    /// What the reader chose (`nil`: no such reader in the store).
    package var preferences: ReaderPreferences?
    /// The best candidates the reader's preferences left out of the picks, and why (composed messages
    /// only: the outbox keeps no candidates).
    package var leftOut: [LeftOutCandidate] = []

    package init(
        source: Source, userID: String, week: String, variant: String?, rules: [String], bytes: [Platform: Int],
        messages: [Platform: [UInt8]], skipped: String?, due: PreviewSidecar.Due? = nil, preferences: ReaderPreferences? = nil,
        leftOut: [LeftOutCandidate] = []
    ) {
        self.source = source
        self.userID = userID
        self.week = week
        self.variant = variant
        self.rules = rules
        self.bytes = bytes
        self.messages = messages
        self.skipped = skipped
        self.due = due
        self.preferences = preferences
        self.leftOut = leftOut
    }

    /// The `preview.json` sidecar of these messages (before the PNGs are listed): the source, the
    /// plan's rules and bytes against `budget`, the due time, the reader's preferences and what they
    /// left out.
    package func sidecar(budget: Int) -> PreviewSidecar {
        PreviewSidecar(
            source: source.rawValue, userID: userID, week: week, variant: variant, rules: rules,
            budgets: Platform.allCases.compactMap { platform in
                bytes[platform].map { .init(platform: platform, bytes: $0, budget: budget) }
            }, due: due, preferences: preferences.map(PreviewSidecar.Preferences.init),
            leftOut: leftOut)
    }
}

extension SingleUserComposer {
    /// The user's messages for the configured week: from `source`, or with `nil` the outbox when it
    /// holds the week's messages and otherwise composed. `nil` when there is no such user.
    package func messages(userID: String, source: UserMessages.Source? = nil, now: Date = Date()) async throws -> UserMessages? {
        let week = configuration.week.description
        if source != .computed {
            let rows = try await database.outboxRows(week: week, userID: userID)
            if !rows.isEmpty || source == .outbox {
                let stored = try await database.withHistoryReader { try await $0.user(id: userID) }
                if rows.isEmpty && stored == nil { return nil }
                var result = UserMessages(
                    source: .outbox, userID: userID, week: week, variant: rows.first?.variant.rawValue, rules: [], bytes: [:],
                    messages: [:], skipped: rows.isEmpty ? "not_in_outbox" : nil)
                result.preferences = stored?.reader.preferences
                for row in rows {
                    guard result.messages[row.platform] == nil else { continue }
                    result.messages[row.platform] = Array(row.message.utf8)
                    let report = OutboxReport(json: row.report)
                    result.rules = report.rules
                    result.bytes.merge(report.bytes) { first, _ in first }
                    if result.due == nil {
                        result.due = PreviewSidecar.Due(
                            at: Timestamp.format(row.availableAt), local: row.dueLocal, timing: row.timing?.rawValue,
                            reason: report.dueReason ?? row.timing.map { "\($0.rawValue)" })
                    }
                }
                return result
            }
        }
        guard let (user, leftOut) = try await composeExplained(userID: userID, now: now) else { return nil }
        var result = UserMessages(
            source: .computed, userID: userID, week: user.week?.description ?? week, variant: user.plan?.variant.rawValue,
            rules: user.plan?.rules ?? [], bytes: user.plan?.bytes ?? [:], messages: [:], skipped: user.skipped?.rawValue)
        result.preferences = user.reader.preferences
        result.leftOut = leftOut
        for message in user.messages where result.messages[message.platform] == nil {
            result.messages[message.platform] = message.message
        }
        if let first = user.messages.first {
            result.due = PreviewSidecar.Due(
                at: Timestamp.format(first.availableAt), local: first.dueLocal, timing: first.timing?.rawValue,
                reason: user.delivery?.reason)
        }
        return result
    }
}

/// The report stored beside an outbox message (``NotificationPlan/reportJSON()``), read back.
struct OutboxReport {
    var rules: [String] = []
    var bytes: [Platform: Int] = [:]
    /// `due_reason`: why the message is due when it is (habit timing).
    var dueReason: String?

    init(json: String) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return }
        rules = object["rules"] as? [String] ?? []
        dueReason = object["due_reason"] as? String
        for (key, value) in object["bytes"] as? [String: Any] ?? [:] {
            if let platform = Platform(rawValue: key), let count = value as? Int { bytes[platform] = count }
        }
    }
}
