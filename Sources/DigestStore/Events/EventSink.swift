/// Records the events apps report (`digest collect`) into the store's `digest_events`, one row per
/// (message, type, action): a second report of the same is a duplicate, whichever collector gets it.
///
/// ```swift
/// let result = try await database.withEventSink { sink in
///     try await sink.record(EventBatch.parse(body, now: now).events, now: now)
/// }
/// ```
public protocol EventSink: Sendable {
    /// Records `events` received at `now` (Unix seconds) in one transaction: refuses those whose
    /// message neither the outbox nor the test sends hold (``EventRejection/unknownMessage``; a test
    /// send's events go to a table of their own, which no report reads) or that happened before
    /// the message was written (``EventRejection/beforeMessage``), and counts the rest as accepted or
    /// duplicates (`INSERT … ON CONFLICT DO NOTHING`, so concurrent requests with the same event
    /// record it once).
    func record(_ events: [IndexedEvent], now: Int64) async throws -> EventBatchResult
}

/// What the outbox says about the message an event names, copied onto the event's row so that the
/// week's report groups events without the outbox row (which retention may delete).
public struct EventTarget: Sendable, Hashable {
    /// When the message was written to the outbox (Unix seconds): no event happens before it.
    public var createdAt: Int64
    public var week: String
    public var variant: String
    public var platform: String
    public var locale: String?
    /// The A/B arm (`image`, `text`) of a split week's message, from its report.
    public var arm: String?
    /// A test send's message (`digest send-test`): its events go to `digest_test_events`, in no report.
    public var isTest: Bool

    public init(createdAt: Int64, week: String, variant: String, platform: String, locale: String?, arm: String?, isTest: Bool = false) {
        self.createdAt = createdAt
        self.week = week
        self.variant = variant
        self.platform = platform
        self.locale = locale
        self.arm = arm
        self.isTest = isTest
    }
}

/// The store's half of judging events, the same on every backend: given the messages found by id,
/// which events to insert and which to refuse.
public enum EventScreen {
    /// Events whose message is in `targets` and did not happen before it, with their target; the rest
    /// refused, by index.
    public static func screen(
        _ events: [IndexedEvent], targets: [String: EventTarget]
    ) -> (insert: [(IndexedEvent, EventTarget)], rejected: [RejectedEvent]) {
        var insert: [(IndexedEvent, EventTarget)] = []
        var rejected: [RejectedEvent] = []
        insert.reserveCapacity(events.count)
        for item in events {
            guard let target = targets[item.event.messageID] else {
                rejected.append(RejectedEvent(index: item.index, reason: .unknownMessage))
                continue
            }
            guard item.event.at >= target.createdAt else {
                rejected.append(RejectedEvent(index: item.index, reason: .beforeMessage))
                continue
            }
            insert.append((item, target))
        }
        return (insert, rejected)
    }

    /// The distinct message ids of `events`, in first-seen order.
    public static func messageIDs(_ events: [IndexedEvent]) -> [String] {
        var seen = Set<String>()
        return events.compactMap { seen.insert($0.event.messageID).inserted ? $0.event.messageID : nil }
    }
}

/// A week's figures for one group of messages (variant, platform, locale and A/B arm): what
/// `digest report` reads from the store.
public struct EventCounts: Sendable, Hashable, Codable {
    public var variant: String
    public var platform: String
    /// The template locale that composed the messages ("" when the rows predate it).
    public var locale: String
    /// The A/B arm of a split week (`image`, `text`), "" otherwise.
    public var arm: String
    /// Outbox messages in state `sent`.
    public var sent: Int
    public var received: Int
    public var displayed: Int
    public var opened: Int
    public var dismissed: Int
    /// Action events (one per message and button).
    public var actions: Int

    public init(
        variant: String, platform: String, locale: String, arm: String, sent: Int = 0, received: Int = 0,
        displayed: Int = 0, opened: Int = 0, dismissed: Int = 0, actions: Int = 0
    ) {
        self.variant = variant
        self.platform = platform
        self.locale = locale
        self.arm = arm
        self.sent = sent
        self.received = received
        self.displayed = displayed
        self.opened = opened
        self.dismissed = dismissed
        self.actions = actions
    }

    /// The group's key.
    public var key: [String] { [variant, platform, locale, arm] }

    /// Adds `count` events of `type` (the store's `GROUP BY type` rows).
    public mutating func add(_ type: AppEventType, _ count: Int) {
        switch type {
        case .received: received += count
        case .displayed: displayed += count
        case .opened: opened += count
        case .dismissed: dismissed += count
        case .action: actions += count
        }
    }

    /// Groups sent counts and event counts (`(key, type, count)`) into rows sorted by key.
    public static func merge(sent: [([String], Int)], events: [([String], AppEventType, Int)]) -> [EventCounts] {
        var rows: [[String]: EventCounts] = [:]
        func row(_ key: [String]) -> EventCounts {
            rows[key] ?? EventCounts(variant: key[0], platform: key[1], locale: key[2], arm: key[3])
        }
        for (key, count) in sent {
            var value = row(key)
            value.sent += count
            rows[key] = value
        }
        for (key, type, count) in events {
            var value = row(key)
            value.add(type, count)
            rows[key] = value
        }
        return rows.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }
}
