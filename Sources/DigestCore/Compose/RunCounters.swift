/// What a run (or a batch of it) did, by kind; batches add up into the run's totals, which the store
/// keeps with the run's cursor so a resumed run reports the whole week.
public struct RunCounters: Codable, Sendable, Hashable {
    /// Users looked at.
    public var users = 0
    /// Users who got a digest (at least one message built).
    public var digested = 0
    /// Users who read nothing and got the re-engagement template.
    public var reengaged = 0
    /// Users skipped, by reason (``SkipReason``'s names).
    public var skipped: [String: Int] = [:]
    /// Users per variant.
    public var variants: [String: Int] = [:]
    /// Messages built (one per device).
    public var messages = 0
    /// Messages newly written to the outbox (the rest were there already).
    public var enqueued = 0
    /// Users whose language has no templates (root locale used).
    public var localeFallbacks = 0
    /// Users whose time zone was unknown (UTC used).
    public var timeZoneFallbacks = 0
    /// Top-pick images by outcome: `ready`, or the reason they were unavailable.
    public var images: [String: Int] = [:]
    /// How often each text or budget rule fired (by ``PlanRule``'s names).
    public var rules: [String: Int] = [:]
    /// Devices left out, by reason: `dead_token` (FCM called the token unregistered and it was not
    /// registered again since), `over_limit` (past a reader's first ``DeviceSelection/limit`` live
    /// devices).
    public var devicesSkipped: [String: Int] = [:]
    /// `--deliver-at habit`: digested users by ``DeliveryTiming`` (`habit`, `fallback`, `control`).
    package var timings: [String: Int] = [:]

    public init() {}

    private enum CodingKeys: String, CodingKey {
        case users, digested, reengaged, skipped, variants, messages, enqueued, localeFallbacks, timeZoneFallbacks, images, rules
        case devicesSkipped, timings
    }

    /// Counters stored before a field existed (in `digest_runs` or a chunk's row) read it as empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        users = try container.decodeIfPresent(Int.self, forKey: .users) ?? 0
        digested = try container.decodeIfPresent(Int.self, forKey: .digested) ?? 0
        reengaged = try container.decodeIfPresent(Int.self, forKey: .reengaged) ?? 0
        skipped = try container.decodeIfPresent([String: Int].self, forKey: .skipped) ?? [:]
        variants = try container.decodeIfPresent([String: Int].self, forKey: .variants) ?? [:]
        messages = try container.decodeIfPresent(Int.self, forKey: .messages) ?? 0
        enqueued = try container.decodeIfPresent(Int.self, forKey: .enqueued) ?? 0
        localeFallbacks = try container.decodeIfPresent(Int.self, forKey: .localeFallbacks) ?? 0
        timeZoneFallbacks = try container.decodeIfPresent(Int.self, forKey: .timeZoneFallbacks) ?? 0
        images = try container.decodeIfPresent([String: Int].self, forKey: .images) ?? [:]
        rules = try container.decodeIfPresent([String: Int].self, forKey: .rules) ?? [:]
        devicesSkipped = try container.decodeIfPresent([String: Int].self, forKey: .devicesSkipped) ?? [:]
        timings = try container.decodeIfPresent([String: Int].self, forKey: .timings) ?? [:]
    }

    public mutating func add(_ other: RunCounters) {
        users += other.users
        digested += other.digested
        reengaged += other.reengaged
        skipped.merge(other.skipped, uniquingKeysWith: +)
        variants.merge(other.variants, uniquingKeysWith: +)
        messages += other.messages
        enqueued += other.enqueued
        localeFallbacks += other.localeFallbacks
        timeZoneFallbacks += other.timeZoneFallbacks
        images.merge(other.images, uniquingKeysWith: +)
        rules.merge(other.rules, uniquingKeysWith: +)
        devicesSkipped.merge(other.devicesSkipped, uniquingKeysWith: +)
        timings.merge(other.timings, uniquingKeysWith: +)
    }
}
