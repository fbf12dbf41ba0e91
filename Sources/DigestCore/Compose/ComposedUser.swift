/// What composing one reader gave: the plan and one message per device, or why they were skipped.
public struct ComposedUser: Sendable {
    public var reader: Reader
    /// Why the reader gets no message; `nil` when they were planned.
    public var skipped: SkipReason?
    /// The plan (rules fired, bytes per budget), when not skipped.
    public var plan: NotificationPlan?
    /// One message per device, as the run enqueues them.
    public var messages: [OutboxMessage] = []
    /// The week in the reader's zone (set once they are not skipped for opt-out or devices).
    public var week: ISOWeek?
    public var timeZoneFellBack = false
    public var localeFellBack = false
    public var isReengagement = false
    /// What the attachment provider gave for the top pick's image, if it had one.
    public var image: ImageOutcome?
    /// Web Push devices left out because their row has no subscription keys (counted as
    /// `subscription_keys_missing` among the run's skipped devices).
    package var devicesWithoutKeys = 0
    /// The local time the messages were chosen to be due at, and why (set with the digest).
    package var delivery: DeliveryChoice?

    init(reader: Reader) {
        self.reader = reader
    }

    /// Adds this reader to a batch's counters.
    func count(into counters: inout RunCounters) {
        counters.users += 1
        if reader.deadTokens > 0 { counters.devicesSkipped["dead_token", default: 0] += reader.deadTokens }
        if reader.devicesOverLimit > 0 { counters.devicesSkipped["over_limit", default: 0] += reader.devicesOverLimit }
        if devicesWithoutKeys > 0 {
            counters.devicesSkipped[SkipReason.subscriptionKeysMissing.rawValue, default: 0] += devicesWithoutKeys
        }
        if timeZoneFellBack { counters.timeZoneFallbacks += 1 }
        if localeFellBack { counters.localeFallbacks += 1 }
        switch image {
        case .ready?: counters.images["ready", default: 0] += 1
        case .unavailable(let reason)?: counters.images[reason, default: 0] += 1
        case nil: break
        }
        if let skipped {
            counters.skipped[skipped.rawValue, default: 0] += 1
            return
        }
        guard let plan else { return }
        counters.digested += 1
        if isReengagement { counters.reengaged += 1 }
        counters.variants[plan.variant.rawValue, default: 0] += 1
        if let timing = delivery?.timing { counters.timings[timing.rawValue, default: 0] += 1 }
        for rule in plan.rules {
            // An entry is `<PlanRule name>:<detail>`; counted by the name.
            counters.rules[Self.ruleName(rule), default: 0] += 1
        }
        counters.messages += messages.count
    }

    /// A rule entry's name, what comes before its first `:` (as `rule.prefix { $0 != ":" }`): found on
    /// the UTF-8 bytes when ASCII stands on both sides of the colon (so it is a character of its own).
    static func ruleName(_ rule: String) -> String {
        let utf8 = rule.utf8
        if let colon = utf8.firstIndex(of: UInt8(ascii: ":")) {
            let next = utf8.index(after: colon)
            let asciiBefore = colon == utf8.startIndex || utf8[utf8.index(before: colon)] < 0x80
            if asciiBefore && (next == utf8.endIndex || utf8[next] < 0x80) { return String(rule[..<colon]) }
        }
        return String(rule.prefix { $0 != ":" })
    }
}
