package import DigestCore
package import DigestStore

/// One outbox message of the fixture: its group and whether it was sent.
package struct FixtureMessage: Sendable {
    package var user: String
    package var platform: Platform = .android
    package var variant: Variant = .bigText
    package var locale: String? = "en"
    package var arm: String?
    package var sent = true
    package var week = "2026-W47"
    /// Where a run put the message (its id is then an ordered one); `nil`: the earlier hash id, as on
    /// rows enqueued before ids were ordered.
    package var position: OutboxMessage.RunPosition?

    package init(
        user: String, platform: Platform = .android, variant: Variant = .bigText, locale: String? = "en", arm: String? = nil,
        sent: Bool = true, week: String = "2026-W47", position: OutboxMessage.RunPosition? = nil
    ) {
        self.user = user
        self.platform = platform
        self.variant = variant
        self.locale = locale
        self.arm = arm
        self.sent = sent
        self.week = week
        self.position = position
    }

    package var dedupeKey: String { "\(week):\(user):h-\(user)-\(platform.rawValue)" }
    package var messageID: String {
        position.map { OutboxMessage.messageID(dedupeKey: dedupeKey, position: $0) } ?? OutboxMessage.messageID(dedupeKey: dedupeKey)
    }
}

extension StoreHarness {
    /// When the event fixtures' messages were written: 2026-11-23T09:00:00Z.
    package static let createdAt: Int64 = 1_795_424_400
    /// The collector's fixed clock: 2026-11-23T12:00:00Z.
    package static let now: Int64 = createdAt + 3 * 3600

    /// Writes `messages` to the outbox (through the run's ledger) and marks the sent ones `sent`.
    package func write(_ messages: [FixtureMessage]) async throws {
        try await Self.write(database, messages)
        let sent = messages.filter(\.sent).map { "'\($0.dedupeKey)'" }
        if !sent.isEmpty {
            let at = backend == .sqlite ? "\(Self.createdAt + 60)" : "to_timestamp(\(Self.createdAt + 60))"
            try sql("UPDATE digest_outbox SET state = 'sent', sent_at = \(at), settled_at = \(at) WHERE dedupe_key IN (\(sent.joined(separator: ",")))")
        }
    }

    private static func write<D: DigestDatabase>(_ database: D, _ messages: [FixtureMessage]) async throws {
        let byWeek = Dictionary(grouping: messages, by: \.week)
        for (name, group) in byWeek.sorted(by: { $0.key < $1.key }) {
            let week = try ISOWeek(parsing: name)
            let outbox = group.map { m in
                OutboxMessage(
                    dedupeKey: m.dedupeKey, week: m.week, userID: m.user, platform: m.platform, variant: m.variant,
                    message: Array(#"{"message":{}}"#.utf8),
                    report: m.arm.map { #"{"arm":"\#($0)"}"# } ?? "{}", availableAt: createdAt, locale: m.locale,
                    messageID: m.messageID)
            }
            try await database.withLedger { ledger in
                _ = try await ledger.begin(week: week, now: createdAt)
                _ = try await ledger.commit(week: week, through: 0, messages: outbox, counters: RunCounters(), now: createdAt)
            }
        }
    }
}
