public import DigestCore
import DigestStore

/// A batch of users with the reads their digests need.
struct ReadBatch: Sendable {
    var users: [StoredReader]
    var reads: [[ReadEvent]]
    /// Where the run stands once this batch commits (cursor or chunk, as the store decides).
    var lastKey: Int64

    /// The next batch after `key`, or `nil` when no users are left. Reads start at each user's
    /// previous-week Monday in their own zone.
    static func load(
        from history: some HistoryReader, after key: Int64, limit: Int, calendar: WeekCalendar
    ) throws -> ReadBatch? {
        guard let batch = try history.nextBatch(week: calendar.week, after: key, limit: limit) else { return nil }
        let since = batch.users.map { readsSince($0.reader, calendar: calendar) }
        return ReadBatch(users: batch.users, reads: try history.reads(of: batch.users, since: since), lastKey: batch.position)
    }

    /// Where a user's reads start: their previous-week Monday in their own zone. Skipped users need
    /// no reads: ask from the far future so the store returns none.
    static func readsSince(_ reader: Reader, calendar: WeekCalendar) -> Int64 {
        reader.optedOut || reader.devices.isEmpty ? Int64.max : calendar.window(forZone: reader.timeZone).window.previousStart
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
        // provider bounds its own downloads and fetches each URL once), then the plans, in user order.
        var finished: [(Int, ComposedUser)] = []
        var digested: [(order: Int, user: ComposedUser, window: WeekWindow, digest: WeeklyDigest)] = []
        digested.reserveCapacity(batch.users.count)
        for (stored, reads) in zip(batch.users, batch.reads) {
            switch prepare(stored.reader, reads: reads) {
            case .finished(let user): finished.append((finished.count + digested.count, user))
            case .digested(let user, let window, let digest): digested.append((finished.count + digested.count, user, window, digest))
            }
        }
        let outcomes = await imageOutcomes(Set(digested.compactMap { $0.digest.picks.first?.imageURL }))
        var users = finished
        for (order, user, window, digest) in digested {
            let image = digest.picks.first?.imageURL.map { outcomes[$0] ?? .unavailable(reason: "not_requested") }
            users.append((order, finish(user, window: window, digest: digest, image: image)))
        }
        for (_, user) in users.sorted(by: { $0.0 < $1.0 }) {
            user.count(into: &counters)
            messages.append(contentsOf: user.messages)
        }
        return BatchResult(
            lastKey: batch.lastKey, userCount: batch.users.count, messages: messages, counters: counters)
    }

    /// One user's digest, plan and messages: the one code path behind the run and the previews.
    func composeUser(_ reader: Reader, reads: [ReadEvent]) async -> ComposedUser {
        switch prepare(reader, reads: reads) {
        case .finished(let user):
            return user
        case .digested(let user, let window, let digest):
            var image: ImageOutcome?
            if let url = digest.picks.first?.imageURL { image = await attachments.renditions(forImageAt: url) }
            return finish(user, window: window, digest: digest, image: image)
        }
    }

    /// A user skipped before any digest, or their digest, ready for the image and the plan.
    enum PreparedUser {
        case finished(ComposedUser)
        case digested(ComposedUser, WeekWindow, WeeklyDigest)
    }

    /// The first half of ``composeUser(_:reads:)``: skips, the week window and the digest.
    func prepare(_ reader: Reader, reads: [ReadEvent]) -> PreparedUser {
        var user = ComposedUser(reader: reader)
        if reader.optedOut {
            user.skipped = "opted_out"
            return .finished(user)
        }
        if reader.devices.isEmpty {
            user.skipped = "no_devices"
            return .finished(user)
        }
        let (window, zoneFellBack) = calendar.window(forZone: reader.timeZone)
        user.week = window.week
        user.timeZoneFellBack = zoneFellBack
        let digest = builder.build(reader: reader, window: window, reads: reads)
        user.isReengagement = digest.isReengagement
        return .digested(user, window, digest)
    }

    /// The second half: the plan with the top pick's image outcome, and one message per device.
    func finish(_ prepared: ComposedUser, window: WeekWindow, digest: WeeklyDigest, image: ImageOutcome?) -> ComposedUser {
        var user = prepared
        let reader = user.reader
        let localized = templates.localized(for: reader.locale)
        user.localeFellBack = localized.fellBackToRoot
        user.image = image
        let platforms = Set(reader.devices.map(\.platform))
        let encoded: EncodedPlan
        do {
            encoded = try planner.planAndEncode(
                digest, templates: localized, image: image, platforms: platforms, deliverAt: sendNow)
        } catch {
            user.skipped = "over_budget"
            return user
        }
        let plan = encoded.plan
        user.plan = plan
        let report = plan.reportJSON()
        let bodies = planner.encoder.messages(for: encoded, devices: reader.devices)
        user.messages = zip(reader.devices, bodies).map { device, body in
            OutboxMessage(
                dedupeKey: OutboxMessage.dedupeKey(week: window.week, userID: reader.id, token: device.token),
                week: window.week.description, userID: reader.id, platform: device.platform,
                variant: plan.variant, message: body, report: report, availableAt: plan.deliverAt)
        }
        return user
    }

    /// The provider's outcome for each URL, asked concurrently (the provider bounds its downloads).
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

/// What composing one user gave: the plan and one message per device, or why they were skipped.
public struct ComposedUser: Sendable {
    public var reader: Reader
    /// `opted_out`, `no_devices` or `over_budget`; `nil` when the user was planned.
    public var skipped: String?
    /// The plan (rules fired, bytes per budget), when not skipped.
    public var plan: NotificationPlan?
    /// One message per device, as the run enqueues them.
    public var messages: [OutboxMessage] = []
    /// The week in the user's zone (set once the user is not skipped for opt-out or devices).
    public var week: ISOWeek?
    public var timeZoneFellBack = false
    public var localeFellBack = false
    public var isReengagement = false
    /// What the attachment provider gave for the top pick's image, if it had one.
    public var image: ImageOutcome?

    init(reader: Reader) {
        self.reader = reader
    }

    /// Adds this user to a batch's counters.
    func count(into counters: inout RunCounters) {
        counters.users += 1
        if timeZoneFellBack { counters.timeZoneFallbacks += 1 }
        if localeFellBack { counters.localeFallbacks += 1 }
        switch image {
        case .ready?: counters.images["ready", default: 0] += 1
        case .unavailable(let reason)?: counters.images[reason, default: 0] += 1
        case nil: break
        }
        if let skipped {
            counters.skipped[skipped, default: 0] += 1
            return
        }
        guard let plan else { return }
        counters.digested += 1
        if isReengagement { counters.reengaged += 1 }
        counters.variants[plan.variant.rawValue, default: 0] += 1
        for rule in plan.rules {
            let name = rule.split(separator: ":", maxSplits: 1).first.map(String.init) ?? rule
            counters.rules[name, default: 0] += 1
        }
        counters.messages += messages.count
    }
}
