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

    public init() {}

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
    }
}
