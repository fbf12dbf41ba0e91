import DigestCore
import DigestStore

/// A batch of users with the reads their digests need.
struct ReadBatch: Sendable {
    var users: [StoredReader]
    var reads: [[ReadEvent]]

    var lastKey: Int64 { users.last?.key ?? 0 }

    /// The next batch after `key`, or `nil` when no users are left. Reads start at each user's
    /// previous-week Monday in their own zone.
    static func load(
        from history: some HistoryReader, after key: Int64, limit: Int, calendar: WeekCalendar
    ) throws -> ReadBatch? {
        let users = try history.users(after: key, limit: limit)
        guard !users.isEmpty else { return nil }
        // Skipped users need no reads: ask from the far future so the store returns none.
        let since = users.map { user -> Int64 in
            user.reader.optedOut || user.reader.devices.isEmpty
                ? Int64.max : calendar.window(forZone: user.reader.timeZone).window.previousStart
        }
        return ReadBatch(users: users, reads: try history.reads(of: users, since: since))
    }
}

/// What one batch produced.
struct BatchResult: Sendable {
    var lastKey: Int64
    var userCount: Int
    var messages: [OutboxMessage]
    var counters: RunCounters
}

/// Computes a batch's digests, plans and messages; pure but for the attachment provider.
struct BatchComposer: Sendable {
    let calendar: WeekCalendar
    let builder: DigestBuilder
    let templates: TemplateCatalog
    let planner: VariantPlanner
    let attachments: any AttachmentProvider
    /// When set, every message is due at this instant.
    let sendNow: Int64?

    func compose(_ batch: ReadBatch) async -> BatchResult {
        var counters = RunCounters()
        var messages: [OutboxMessage] = []
        messages.reserveCapacity(batch.users.count * 2)
        // First the digests, then every distinct top-pick image of the batch asked for at once (the
        // provider bounds its own downloads and fetches each URL once), then the plans.
        var digested: [(reader: Reader, window: WeekWindow, digest: WeeklyDigest)] = []
        digested.reserveCapacity(batch.users.count)
        for (stored, reads) in zip(batch.users, batch.reads) {
            let reader = stored.reader
            counters.users += 1
            if reader.optedOut {
                counters.skipped["opted_out", default: 0] += 1
                continue
            }
            if reader.devices.isEmpty {
                counters.skipped["no_devices", default: 0] += 1
                continue
            }
            let (window, zoneFellBack) = calendar.window(forZone: reader.timeZone)
            if zoneFellBack { counters.timeZoneFallbacks += 1 }
            digested.append((reader, window, builder.build(reader: reader, window: window, reads: reads)))
        }
        let outcomes = await imageOutcomes(Set(digested.compactMap { $0.digest.picks.first?.imageURL }))
        for (reader, window, digest) in digested {
            let localized = templates.localized(for: reader.locale)
            if localized.fellBackToRoot { counters.localeFallbacks += 1 }
            var image: ImageOutcome?
            if let url = digest.picks.first?.imageURL {
                let outcome = outcomes[url] ?? .unavailable(reason: "not_requested")
                image = outcome
                switch outcome {
                case .ready: counters.images["ready", default: 0] += 1
                case .unavailable(let reason): counters.images[reason, default: 0] += 1
                }
            }
            let platforms = Set(reader.devices.map(\.platform))
            var plan: NotificationPlan
            do {
                plan = try planner.plan(digest, templates: localized, image: image, platforms: platforms)
            } catch {
                counters.skipped["over_budget", default: 0] += 1
                continue
            }
            if let sendNow { plan.deliverAt = sendNow }
            counters.digested += 1
            if digest.isReengagement { counters.reengaged += 1 }
            counters.variants[plan.variant.rawValue, default: 0] += 1
            for rule in plan.rules {
                let name = rule.split(separator: ":", maxSplits: 1).first.map(String.init) ?? rule
                counters.rules[name, default: 0] += 1
            }
            let report = plan.reportJSON()
            for device in reader.devices {
                messages.append(
                    OutboxMessage(
                        dedupeKey: OutboxMessage.dedupeKey(week: window.week, userID: reader.id, token: device.token),
                        week: window.week.description, userID: reader.id, platform: device.platform,
                        variant: plan.variant, message: planner.encoder.message(for: plan, device: device),
                        report: report, availableAt: plan.deliverAt))
            }
            counters.messages += reader.devices.count
        }
        return BatchResult(
            lastKey: batch.lastKey, userCount: batch.users.count, messages: messages, counters: counters)
    }

    /// The provider's outcome for each URL, asked concurrently.
    private func imageOutcomes(_ urls: Set<String>) async -> [String: ImageOutcome] {
        await withTaskGroup(of: (String, ImageOutcome).self) { group in
            for url in urls {
                group.addTask { (url, await attachments.renditions(forImageAt: url)) }
            }
            var outcomes: [String: ImageOutcome] = [:]
            for await (url, outcome) in group { outcomes[url] = outcome }
            return outcomes
        }
    }
}
