/// A week's presses of the buttons that change preferences (`fewer`, `pause`, `off`) for one group of
/// messages — variant, platform, A/B arm ("" outside a split week) and delivery timing ("" without
/// `--deliver-at habit`) — against the group's messages sent: what `digest report` turns into presses
/// per 1,000 sent.
package struct ActionCounts: Sendable, Hashable {
    /// The buttons the report counts, in its order.
    package static let actions = ["fewer", "pause", "off"]

    package var variant: String
    package var platform: String
    package var arm: String
    package var timing: String
    /// Outbox messages in state `sent` (and what a prune deleted of them, whose timing is "").
    package var sent: Int
    /// `action` events per button (one per message and button).
    package var presses: [String: Int]

    package init(variant: String, platform: String, arm: String = "", timing: String = "", sent: Int = 0, presses: [String: Int] = [:]) {
        self.variant = variant
        self.platform = platform
        self.arm = arm
        self.timing = timing
        self.sent = sent
        self.presses = presses
    }

    package var key: [String] { [variant, platform, arm, timing] }

    /// Groups the stores' rows — `action` "" for a sent count, else the button pressed — sorted by key.
    package static func merge(_ rows: [(action: String, key: [String], count: Int)]) -> [ActionCounts] {
        var groups: [[String]: ActionCounts] = [:]
        for row in rows {
            var group = groups[row.key] ?? ActionCounts(variant: row.key[0], platform: row.key[1], arm: row.key[2], timing: row.key[3])
            if row.action.isEmpty {
                group.sent += row.count
            } else {
                group.presses[row.action, default: 0] += row.count
            }
            groups[row.key] = group
        }
        return groups.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }
}

/// A week's readers of one delivery timing (`habit`, `control`, `fallback`) sent a message, and of
/// them those who paused or stopped the digest with a button (a `pause` or `off` change with source
/// `action`) within 7 days of their due time: the cost side of a lift. A reader counts once.
package struct StoppedReaders: Sendable, Hashable {
    /// What "within 7 days of the due time" means: a change at or after the reader's due time
    /// (their earliest `available_at` of the week) and less than this many seconds after it.
    package static let window: Int64 = 7 * 86_400

    package var timing: String
    /// Readers with a message of the week in state `sent`.
    package var readers: Int
    package var stopped: Int

    package init(timing: String, readers: Int = 0, stopped: Int = 0) {
        self.timing = timing
        self.readers = readers
        self.stopped = stopped
    }

    /// Groups the stores' rows — per timing, readers and those of them who stopped — sorted by timing.
    package static func merge(_ rows: [(timing: String, readers: Int, stopped: Int)]) -> [StoppedReaders] {
        var groups: [String: StoppedReaders] = [:]
        for row in rows {
            var group = groups[row.timing] ?? StoppedReaders(timing: row.timing)
            group.readers += row.readers
            group.stopped += row.stopped
            groups[row.timing] = group
        }
        return groups.values.sorted { $0.timing < $1.timing }
    }
}

/// What `digest report` reads of a week's button presses; both stores have it, each query one read
/// of the week's rows.
package protocol ActionViews: Sendable {
    /// The week's sent messages and `fewer`/`pause`/`off` presses per variant, platform, arm and timing.
    func actionCounts(week: String) async throws -> [ActionCounts]
    /// The week's readers per delivery timing and those who paused or stopped within 7 days of their
    /// due time; empty for a week without habit timing. Reads the outbox rows: a pruned week has none.
    func stoppedReaders(week: String) async throws -> [StoppedReaders]
}

extension DigestOperatorViews {
    /// ``ActionViews/actionCounts(week:)`` of a store that has it; empty for one that does not.
    package func pressesByGroup(week: String) async throws -> [ActionCounts] {
        guard let views = self as? any ActionViews else { return [] }
        return try await views.actionCounts(week: week)
    }

    /// ``ActionViews/stoppedReaders(week:)`` of a store that has it; empty for one that does not.
    package func stoppedByTiming(week: String) async throws -> [StoppedReaders] {
        guard let views = self as? any ActionViews else { return [] }
        return try await views.stoppedReaders(week: week)
    }
}
