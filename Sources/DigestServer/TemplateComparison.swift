import Crypto
package import DigestCore
package import DigestPreview
package import DigestStore
package import Foundation

/// Composes readers' messages for a week with two template folders on the run's own code path — one
/// ``BatchComposer`` per folder over the same articles, histories, attachment provider, configuration
/// and instant, so the two compositions differ only by their templates — and says what changed in each
/// message. Editors use it (`digest preview --compare`, the page's comparison) to see what a copy edit
/// does to every locale before it ships.
///
/// A message here is one reader's message for one platform (a reader's devices of a platform all get
/// the same text, as on the preview page).
///
/// ```swift
/// let comparison = TemplateComparison(database: store, old: oldCatalog, new: newCatalog, configuration: .init(week: week))
/// let composers = try await comparison.composers()
/// for reader in try await comparison.compose(users, with: composers) { let changes = reader.messages(budget: 3800) … }
/// ```
package struct TemplateComparison<Database: DigestDatabase>: Sendable {
    package let database: Database
    package let old: TemplateCatalog
    package let new: TemplateCatalog
    package let attachments: any AttachmentProvider
    package let configuration: BatchComposer.Configuration
    /// The instant both compositions are made at (the run's `now`: due times and message ids).
    package let now: Date

    package init(
        database: Database, old: TemplateCatalog, new: TemplateCatalog, attachments: any AttachmentProvider = NoAttachments(),
        configuration: BatchComposer.Configuration, now: Date = Date()
    ) {
        self.database = database
        self.old = old
        self.new = new
        self.attachments = attachments
        self.configuration = configuration
        self.now = now
    }

    /// The two composers, over the week's candidate articles read once.
    package struct Composers: Sendable {
        package var old: BatchComposer
        package var new: BatchComposer
    }

    /// The week's candidate articles (as a run reads them) and a composer per folder over them.
    package func composers() async throws -> Composers {
        let range = configuration.articleRange
        let articles = try await database.withHistoryReader { try await $0.articles(publishedFrom: range.from, until: range.until) }
        let instant = Int64(now.timeIntervalSince1970)
        func composer(_ templates: TemplateCatalog) -> BatchComposer {
            BatchComposer(configuration: configuration, articles: articles, templates: templates, attachments: attachments, now: instant)
        }
        return Composers(old: composer(old), new: composer(new))
    }

    /// Each user composed with both folders from one read of their history (``BatchComposer/composeUser(_:history:)``,
    /// the previews' path), in the order of a run's batch.
    package func compose(_ users: [StoredReader], with composers: Composers) async throws -> [ComparedReader] {
        guard !users.isEmpty else { return [] }
        // The stores match history rows to users in a run's batch order: SQLite by key (its primary
        // key), PostgreSQL by id bytes (its keys number a query's rows, so equal for users read one by
        // one). Pages by id and lists of ids are neither until sorted so.
        let users = users.sorted { a, b in
            a.key != b.key ? a.key < b.key : a.reader.id.utf8.lexicographicallyPrecedes(b.reader.id.utf8)
        }
        // The history a digest needs depends on the configuration, never the templates: read once.
        let histories = try await database.withHistoryReader { try await $0.histories(of: users, for: composers.new) }
        var result: [ComparedReader] = []
        result.reserveCapacity(users.count)
        for (stored, history) in zip(users, histories) {
            let old = await composers.old.composeUser(stored.reader, history: history)
            let new = await composers.new.composeUser(stored.reader, history: history)
            result.append(ComparedReader(old: old, new: new))
        }
        // Readers with preferences (other than `off`, which was opt-out before them) composed once
        // more, with the new folder and default preferences, from the history a default reader's
        // digest reads: what their preferences change apart from the templates. Nothing more for the
        // others.
        let chosen = users.indices.filter { users[$0].reader.preferences != Self.defaults(for: users[$0].reader.preferences) }
        guard !chosen.isEmpty else { return result }
        let plain = chosen.map { index in
            var stored = users[index]
            stored.reader.preferences = Self.defaults(for: stored.reader.preferences)
            return stored
        }
        let plainHistories = try await database.withHistoryReader { try await $0.histories(of: plain, for: composers.new) }
        for (index, (stored, history)) in zip(chosen, zip(plain, plainHistories)) {
            result[index].withDefaultPreferences = await composers.new.composeUser(stored.reader, history: history)
        }
        return result
    }

    /// Default preferences but the reader's `off`.
    static func defaults(for preferences: ReaderPreferences) -> ReaderPreferences {
        ReaderPreferences(off: preferences.off)
    }

    /// Pages of every user of the store, in id order (``HistoryReader/users(afterID:limit:)``: no run's
    /// cursor or chunk is touched), handed to `body` one page at a time.
    package func forEachPage(size: Int, _ body: ([StoredReader]) async throws -> Void) async throws {
        var after = ""
        while true {
            let page = try await database.withHistoryReader { try await $0.users(afterID: after, limit: size) }
            guard let last = page.last else { return }
            try await body(page)
            after = last.reader.id
        }
    }

    /// The users with these ids, in the order given; ids with no user come back in `missing`.
    package func users(ids: [String]) async throws -> (users: [StoredReader], missing: [String]) {
        try await database.withHistoryReader { history in
            var users: [StoredReader] = [], missing: [String] = []
            for id in ids {
                if let user = try await history.user(id: id) { users.append(user) } else { missing.append(id) }
            }
            return (users, missing)
        }
    }

    /// A stable sample of `size` readers (``ReaderSample``): every user composed with the new folder
    /// alone, a page at a time, keeping only what the choice needs. Returns the chosen ids in hash order.
    package func sample(size: Int, pageSize: Int, composers: Composers) async throws -> [String] {
        var sample = ReaderSample(size: size)
        try await forEachPage(size: pageSize) { page in
            let histories = try await database.withHistoryReader { try await $0.histories(of: page, for: composers.new) }
            for (stored, history) in zip(page, histories) {
                let user = await composers.new.composeUser(stored.reader, history: history)
                sample.consider(user)
            }
        }
        return sample.chosen()
    }
}

/// One reader composed with the old and the new folder.
package struct ComparedReader: Sendable {
    package var old: ComposedUser
    package var new: ComposedUser
    /// For a reader with preferences, the new folder's composition with default preferences (their
    /// `off` kept); `nil` for a reader with none.
    package var withDefaultPreferences: ComposedUser?

    package init(old: ComposedUser, new: ComposedUser, withDefaultPreferences: ComposedUser? = nil) {
        self.old = old
        self.new = new
        self.withDefaultPreferences = withDefaultPreferences
    }

    /// Whether the reader's preferences skip them (`not_this_week`, `paused`) where default
    /// preferences would not.
    package var skippedByPreferences: Bool {
        guard let plain = withDefaultPreferences, let skipped = new.skipped else { return false }
        return (skipped == .notThisWeek || skipped == .paused) && plain.skipped != skipped
    }

    package var userID: String { new.reader.id }

    /// One comparison per platform either composition has a message for, in platform order.
    package func messages(budget: Int) -> [MessageComparison] {
        func first(_ user: ComposedUser) -> [Platform: OutboxMessage] {
            var found: [Platform: OutboxMessage] = [:]
            for message in user.messages where found[message.platform] == nil { found[message.platform] = message }
            return found
        }
        let olds = first(old), news = first(new), plains = withDefaultPreferences.map(first)
        return Platform.allCases.compactMap { platform in
            let oldMessage = olds[platform], newMessage = news[platform]
            guard oldMessage != nil || newMessage != nil else { return nil }
            var comparison = MessageComparison(
                userID: userID, platform: platform,
                locale: newMessage?.locale ?? oldMessage?.locale ?? new.reader.locale,
                old: .init(old, message: oldMessage, platform: platform, budget: budget),
                new: .init(new, message: newMessage, platform: platform, budget: budget))
            if let plains { comparison.byPreferences = plains[platform]?.message != newMessage?.message }
            return comparison
        }
    }
}

/// One message (a reader's, for one platform) as each folder composed it, and what differs before
/// anything is drawn.
package struct MessageComparison: Sendable {
    /// One folder's message and plan.
    package struct Side: Sendable {
        /// The FCM v1 body (or APNs payload); `nil` when this folder gave the reader no message.
        package var message: [UInt8]?
        package var variant: String?
        /// Why this folder gave the reader no message (a ``SkipReason``'s name).
        package var skipped: String?
        package var rules: [String]
        /// Bytes against the platform's budget, as the planner counted them.
        package var bytes: Int?
        package var budget: Int

        init(_ user: ComposedUser, message: OutboxMessage?, platform: Platform, budget: Int) {
            self.message = message?.message
            variant = user.plan?.variant.rawValue
            skipped = user.skipped?.rawValue
            rules = user.plan?.rules ?? []
            bytes = user.plan?.bytes[platform]
            self.budget = min(budget, PreviewSidecar.BudgetUse.ceiling(for: platform))
        }

        /// The budget made the planner give something up (a `budget.*` rule), or nothing fitted.
        package var hitBudget: Bool {
            skipped == SkipReason.overBudget.rawValue || rules.contains { $0.hasPrefix("budget.") }
        }

        /// The planner's text cuts ("…" appended by the text rules), by rule name.
        package var textCuts: Set<String> {
            Set(rules.map { String($0.prefix { $0 != ":" }) }.filter(MessageComparison.cutRules.contains))
        }
    }

    package var userID: String
    package var platform: Platform
    package var locale: String
    package var old: Side
    package var new: Side
    /// Whether the new folder's message differs from what it gives the reader with default
    /// preferences (other picks, other weeks' texts): a change of the reader's, not the templates'.
    package var byPreferences = false

    /// Rules whose firing ends in a text cut with "…".
    static let cutRules: Set<String> = [
        PlanRule.titleTruncated, .bodyTruncated, .headerTruncated, .bulletTruncated, .androidUTF16Truncated, .budgetTitle,
        .budgetBody, .budgetBulletTitle,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// Whether the message a device gets differs (both compositions share ids and due times, so
    /// equal bytes are an equal message).
    package var changed: Bool { old.message != new.message || old.skipped != new.skipped }

    /// Rules (with their detail) only the new plan has, and only the old plan has.
    package var rulesAdded: [String] { new.rules.filter { !old.rules.contains($0) } }
    package var rulesRemoved: [String] { old.rules.filter { !new.rules.contains($0) } }
}

/// A stable sample of readers: for each locale × variant the new folder gives messages in, the reader
/// whose id hashes lowest, then the others in hash order up to the size. Only what the choice needs is
/// kept (one reader per class and at most twice the size in hash order), so a store of any size is
/// sampled in flat memory. Readers the new folder gives no message are not sampled, except those it
/// fails for lack of budget (which the old folder may not).
package struct ReaderSample: Sendable {
    package let size: Int
    private var firstOfClass: [String: (hash: UInt64, id: String)] = [:]
    private var lowest: [(hash: UInt64, id: String)] = []

    package init(size: Int) {
        self.size = max(1, size)
    }

    /// A reader's place in the sample's order: the first 8 bytes of SHA-256 of their id (the same
    /// every week and on every store).
    package static func hash(_ id: String) -> UInt64 {
        SHA256.hash(data: Array(id.utf8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Counts `user` in (as the new folder composed them).
    package mutating func consider(_ user: ComposedUser) {
        let id = user.reader.id
        let hash = Self.hash(id)
        if let plan = user.plan, let locale = user.messages.first?.locale {
            let key = "\(locale) \(plan.variant.rawValue)"
            if let current = firstOfClass[key], current.hash <= hash {} else { firstOfClass[key] = (hash, id) }
        } else if user.skipped != .overBudget {
            return
        }
        lowest.append((hash, id))
        if lowest.count >= 2 * size {
            lowest.sort { $0.hash < $1.hash }
            lowest.removeLast(lowest.count - size)
        }
    }

    /// The chosen ids in hash order: one per class, then the lowest hashes up to the size (more when
    /// there are more classes than the size).
    package func chosen() -> [String] {
        var chosen = Dictionary(firstOfClass.values.map { ($0.id, $0.hash) }, uniquingKeysWith: { first, _ in first })
        for (hash, id) in lowest.sorted(by: { $0.hash < $1.hash }) where chosen.count < size {
            chosen[id] = hash
        }
        return chosen.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
    }
}
