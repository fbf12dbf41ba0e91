/// Composes readers' digests, plans and messages for a week: the one code path behind the weekly run
/// and the previews. Pure but for the attachment provider (the top picks' images).
///
/// ```swift
/// let composer = BatchComposer(configuration: .init(week: week), articles: articles, templates: catalog,
///                              attachments: NoAttachments(), now: now)
/// let batch = await composer.compose(readers, histories: histories, batch: 0)
/// ```
public struct BatchComposer: Sendable {
    /// When messages become due.
    public enum SendAt: String, Sendable {
        /// The Monday after the week, at the delivery time, in each user's zone.
        case local
        /// At once.
        case now
    }

    /// What shapes a week's messages: the week, delivery, and the builder's, planner's and encoder's
    /// settings.
    public struct Configuration: Sendable {
        public var week: ISOWeek
        public var sendAt: SendAt = .local
        public var delivery: WeekCalendar.DeliveryTime = .mondayMorning
        /// Local hours in which no message becomes due (`nil`: none; ignored with ``SendAt/now``).
        public var quietHours: QuietHours? = .night
        /// `--deliver-at habit`: each reader at their reading hour, ``delivery`` the fallback (`nil`: off).
        package var habit: HabitDelivery?
        public var digest = DigestBuilder.Configuration()
        public var planner = VariantPlanner.Configuration()
        public var encoder = NotificationEncoder.Configuration()
        /// `--reply-key-file`: every message carries its `reply_key` (`nil`: none).
        package var replyKeys: ReplyKeys?

        public init(week: ISOWeek) {
            self.week = week
        }

        /// Articles a week's digests can pick from: every zone's window lies within 14 hours (ahead)
        /// or 12 hours (behind) of the UTC week; as far back as the longest pace a reader may choose
        /// (``ReaderPreferences/allowedEvery``) when that is longer than the freshness.
        package var articleRange: (from: Int64, until: Int64) {
            let utc = WeekCalendar(week: week, delivery: delivery).utcWindow
            let longest = Int64(ReaderPreferences.allowedEvery.max() ?? 1) * 7 * 86_400
            return (utc.end - max(digest.freshnessSeconds, longest) - 14 * 3600, utc.end + 12 * 3600)
        }
    }

    package let calendar: WeekCalendar
    package let builder: DigestBuilder
    let templates: TemplateCatalog
    let planner: VariantPlanner
    let attachments: any AttachmentProvider
    /// When set, every message is due at this instant.
    let sendNow: Int64?
    /// Habit timing, when on.
    let habit: HabitDelivery?

    /// A composer over the week's candidate `articles` (those in ``Configuration/articleRange``).
    public init(
        configuration: Configuration, articles: [Article], templates: TemplateCatalog, attachments: any AttachmentProvider,
        now: Int64
    ) {
        calendar = WeekCalendar(
            week: configuration.week, delivery: configuration.delivery, quietHours: configuration.quietHours)
        builder = DigestBuilder(pool: CandidatePool(articles: articles), configuration: configuration.digest)
        candidateIDs = builder.pool.ids
        self.templates = templates
        planner = VariantPlanner(
            configuration: configuration.planner,
            encoder: NotificationEncoder(configuration: configuration.encoder, replyKeys: configuration.replyKeys))
        self.attachments = attachments
        sendNow = configuration.sendAt == .now ? now : nil
        habit = configuration.habit
        self.now = now
    }

    /// The instant the messages are composed at (the run's).
    package let now: Int64

    /// When a reader's message becomes due and may be sent (``WeekCalendar/slot(forZone:now:ttl:)``;
    /// with ``SendAt/now``, at once with no quiet hours).
    package func slot(for reader: Reader) -> DeliverySlot {
        let ttl = Int64(planner.encoder.configuration.ttlSeconds)
        if let sendNow { return DeliverySlot(availableAt: sendNow, windowEnd: nil, quietUntil: nil, expiresAt: sendNow + ttl) }
        return calendar.slot(forZone: reader.timeZone, now: now, ttl: ttl)
    }

    /// Where a reader's reads start: Monday 00:00 in their own zone of the first of the weeks their
    /// digest looks at (``DigestBuilder/Configuration/historyWeeks``). Skipped readers need no reads:
    /// `Int64.max`, so a store returns none.
    package func readsSince(_ reader: Reader) -> Int64 {
        guard !reader.optedOut, !reader.devices.isEmpty, reader.preferences.isDue(in: calendar.week) else { return Int64.max }
        return readsStart(of: calendar.window(forZone: reader.timeZone).window, span: span(for: reader))
    }

    /// The weeks a reader's digest covers when their pace is over a week (`nil`: the week window).
    package func span(for reader: Reader) -> CoveredSpan? {
        let weeks = reader.preferences.coveredWeeks
        return weeks > 1 ? calendar.span(forZone: reader.timeZone, weeks: weeks) : nil
    }

    /// The ids of the articles digests may pick: the reads of them before ``readsSince(_:)`` are the
    /// ones a store looks up for ``ReaderHistory/readEarlier``.
    package let candidateIDs: [String]

    /// The weeks whose picks a digest does not repeat, latest first.
    package var noRepeatWeeks: [ISOWeek] {
        var weeks: [ISOWeek] = []
        var week = calendar.week
        for _ in 0..<max(0, builder.configuration.noRepeatWeeks) {
            week = week.previous
            weeks.append(week)
        }
        return weeks
    }

    /// Composes a batch: first the digests, then every distinct top-pick image of the batch asked for
    /// at once (the provider bounds its own downloads and fetches each URL once), then the plans; the
    /// messages come in reader order. `batch` is the batch's number in the run, in the order the run
    /// writes its batches: with the reader's place it orders the messages' ids
    /// (``OutboxMessage/messageID(dedupeKey:position:)``).
    public func compose(_ readers: [Reader], histories: [ReaderHistory], batch: Int) async -> ComposedBatch {
        // Each reader is counted as soon as it is done (the counters are sums, in no order); only the
        // digested wait for the images. Their messages are written straight into the batch's, in
        // reader order, and no reader is kept once counted.
        var counters = RunCounters()
        var digested: [(user: ComposedUser, window: WeekWindow, digest: WeeklyDigest, first: OutboxMessage.RunPosition)] = []
        digested.reserveCapacity(readers.count)
        // A reader's first message's place in the batch: the devices of the readers before it.
        var ordinal = 0
        for (reader, history) in zip(readers, histories) {
            let first = OutboxMessage.RunPosition(instant: now, batch: batch, ordinal: ordinal)
            ordinal += reader.devices.count
            switch prepare(reader, history: history) {
            case .finished(let user): user.count(into: &counters)
            case .digested(let user, let window, let digest): digested.append((user, window, digest, first))
            }
        }
        let outcomes = await imageOutcomes(Set(digested.compactMap { $0.digest.picks.first?.imageURL }))
        var messages: [OutboxMessage] = []
        messages.reserveCapacity(ordinal)
        // Taken from the back of the reversed list: each reader moves out of it, in reader order.
        digested.reverse()
        while let (user, window, digest, first) = digested.popLast() {
            let image = digest.picks.first?.imageURL.map { outcomes[$0] ?? .unavailable(reason: "not_requested") }
            let before = messages.count
            let finished = finish(user, window: window, digest: digest, image: image, first: first, into: &messages)
            finished.count(into: &counters)
            counters.messages += messages.count - before
        }
        return ComposedBatch(userCount: readers.count, messages: messages, counters: counters)
    }

    /// One reader's digest, plan and messages (the previews): its ids are those of the first messages
    /// of a run's first batch at ``now``.
    public func composeUser(_ reader: Reader, history: ReaderHistory) async -> ComposedUser {
        switch prepare(reader, history: history) {
        case .finished(let user):
            return user
        case .digested(let user, let window, let digest):
            var image: ImageOutcome?
            if let url = digest.picks.first?.imageURL { image = await attachments.renditions(forImageAt: url) }
            return finish(
                user, window: window, digest: digest, image: image,
                first: OutboxMessage.RunPosition(instant: now, batch: 0, ordinal: 0))
        }
    }

    /// A reader skipped before any digest, or their digest, ready for the image and the plan.
    enum PreparedUser {
        case finished(ComposedUser)
        case digested(ComposedUser, WeekWindow, WeeklyDigest)
    }

    /// The first half of ``composeUser(_:history:)``: skips, the week window and the digest.
    ///
    /// The reader's preferences skip first (`off`, then the pace's `not_this_week`), before their
    /// devices; a pause once the due time is known (after habit timing, quiet hours and a late run),
    /// before dormancy.
    func prepare(_ reader: Reader, history: ReaderHistory) -> PreparedUser {
        var user = ComposedUser(reader: reader)
        if reader.optedOut {
            user.skipped = .optedOut
            return .finished(user)
        }
        if !reader.preferences.isDue(in: calendar.week) {
            user.skipped = .notThisWeek
            return .finished(user)
        }
        if reader.devices.isEmpty {
            user.skipped = reader.deadTokens > 0 ? .deadTokens : .noDevices
            return .finished(user)
        }
        // A reader with no device the composer can encode for gets no digest (and no image fetched).
        user.devicesWithoutKeys = reader.devices.count { !Self.canEncode($0) }
        if user.devicesWithoutKeys == reader.devices.count {
            user.skipped = .subscriptionKeysMissing
            return .finished(user)
        }
        let (window, zoneFellBack) = calendar.window(forZone: reader.timeZone)
        user.week = window.week
        user.timeZoneFellBack = zoneFellBack
        // A pause and "fewer" need the due time, so the delivery choice first; the others get it as before.
        var delivery: DeliveryChoice?
        var fewer: [String] = []
        if reader.preferences.pausedUntil != nil || !reader.preferences.fewer.isEmpty {
            let choice = deliveryChoice(for: reader, window: window, reads: history.reads)
            let due = slot(for: reader, choice: choice).availableAt
            if reader.preferences.isPaused(on: calendar.localDate(of: due, zone: reader.timeZone)) {
                user.skipped = .paused
                return .finished(user)
            }
            delivery = choice
            fewer = reader.preferences.fewerTopics(dueAt: due)
        }
        if builder.isDormant(window: window, reads: history.reads) {
            user.skipped = .dormant
            return .finished(user)
        }
        let digest = builder.build(reader: reader, window: window, history: history, span: span(for: reader), fewer: fewer)
        user.isReengagement = digest.isReengagement
        user.delivery = delivery ?? deliveryChoice(for: reader, window: window, reads: history.reads)
        return .digested(user, window, digest)
    }

    /// The second half: the plan with the top pick's image outcome, and one message per device, the
    /// first at `first` in the run and the others after it.
    func finish(
        _ prepared: consuming ComposedUser, window: WeekWindow, digest: WeeklyDigest, image: ImageOutcome?,
        first: OutboxMessage.RunPosition
    ) -> ComposedUser {
        var messages: [OutboxMessage] = []
        var user = finish(prepared, window: window, digest: digest, image: image, first: first, into: &messages)
        user.messages = messages
        return user
    }

    /// ``finish(_:window:digest:image:first:)`` with the messages appended to `messages` rather than
    /// kept on the returned reader (whose ``ComposedUser/messages`` stay empty).
    func finish(
        _ prepared: consuming ComposedUser, window: WeekWindow, digest: WeeklyDigest, image: ImageOutcome?,
        first: OutboxMessage.RunPosition, into messages: inout [OutboxMessage]
    ) -> ComposedUser {
        var user = prepared
        let reader = user.reader
        let localized = templates.localized(for: reader.locale)
        user.localeFellBack = localized.fellBackToRoot
        user.image = image
        let devices = user.devicesWithoutKeys == 0 ? reader.devices : reader.devices.filter(Self.canEncode)
        let platforms = Set(devices.map(\.platform))
        let slot = slot(for: reader, choice: user.delivery)
        let encoded: EncodedPlan
        do {
            encoded = try planner.planAndEncode(
                digest, templates: localized, image: image, platforms: platforms, deliverAt: slot.availableAt)
        } catch {
            user.skipped = .overBudget
            return user
        }
        var plan = encoded.plan
        plan.dueReason = user.delivery?.reason
        if digest.picks.count < builder.configuration.maxPicks {
            plan.rules.append("\(PlanRule.picksShort.rawValue):\(digest.picks.count)")
        }
        user.plan = plan
        let report = plan.reportJSON()
        let week = window.week.description
        let keys = devices.map { OutboxMessage.dedupeKey(week: week, userID: reader.id, token: $0.token) }
        let ids = keys.indices.map { OutboxMessage.messageID(dedupeKey: keys[$0], position: first.advanced(by: $0)) }
        // Each provider's devices encoded together, in the reader's device order.
        var bodies = [(message: [UInt8], headers: String?)](repeating: ([], nil), count: devices.count)
        for provider in Provider.allCases where devices.contains(where: { $0.provider == provider }) {
            let indices = devices.indices.filter { devices[$0].provider == provider }
            let chosen = indices.map { devices[$0] }, chosenIDs = indices.map { ids[$0] }
            switch provider {
            case .fcm:
                for (index, body) in zip(indices, planner.encoder.messages(for: encoded, devices: chosen, messageIDs: chosenIDs)) {
                    bodies[index] = (body, nil)
                }
            case .apns:
                let apns = APNsEncoder(configuration: .init(topic: nil), encoder: planner.encoder)
                for (index, request) in zip(indices, apns.messages(for: encoded, devices: chosen, messageIDs: chosenIDs)) {
                    bodies[index] = (request.payload, request.headers.json)
                }
            case .webpush:
                // `canEncode` keeps only Web Push devices with keys.
                let webPush = WebPushEncoder(encoder: planner.encoder)
                let keys = chosen.compactMap(\.subscriptionKeys)
                for (index, message) in zip(indices, webPush.messages(for: encoded, keys: keys, messageIDs: chosenIDs)) {
                    bodies[index] = (message.plaintext, message.headers.json)
                }
            }
        }
        for index in devices.indices {
            let device = devices[index]
            var message = OutboxMessage(
                dedupeKey: keys[index],
                week: week, userID: reader.id, platform: device.platform,
                variant: plan.variant, message: bodies[index].message, report: report, availableAt: slot.availableAt, picks: plan.picks,
                windowEnd: slot.windowEnd, quietUntil: slot.quietUntil, expiresAt: slot.expiresAt,
                locale: localized.resolved, messageID: ids[index], provider: device.provider, target: device.token,
                headers: bodies[index].headers)
            // The chosen timing and local due time.
            if let delivery = user.delivery {
                message.timing = delivery.timing
                message.dueLocal = delivery.dueLocal
            }
            messages.append(message)
        }
        return user
    }

    /// Whether the composer can encode a message for the device: every provider's, but a Web Push
    /// subscription needs its keys to be encrypted to (one without is `subscription_keys_missing`).
    static func canEncode(_ device: Device) -> Bool {
        switch device.provider {
        case .fcm, .apns: true
        case .webpush: device.subscriptionKeys != nil
        }
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

/// What composing a batch gave: its messages in reader order and what it did.
public struct ComposedBatch: Sendable {
    public var userCount: Int
    public var messages: [OutboxMessage]
    public var counters: RunCounters
}
