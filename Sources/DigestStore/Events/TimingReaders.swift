/// A week's readers of one delivery timing (`--deliver-at habit`: `habit`, `fallback`, `control`), from
/// the outbox rows that carry it and the `opened` events of their messages: what `digest report`
/// compares and `digest run --status` counts. A reader counts once, whatever their devices.
package struct TimingReaders: Sendable, Hashable {
    package var timing: String
    /// Readers with a message of the week in the outbox (any state).
    package var readers: Int
    /// Readers with a message in state `sent`.
    package var sent: Int
    /// Of those, readers with an `opened` event on any of their messages.
    package var opened: Int
    /// Those opened readers by whole minutes from their due time (`available_at`) to their first
    /// `opened` event: a histogram, so the median needs no list of readers.
    package var minutesToOpen: [Int: Int]

    package init(timing: String, readers: Int = 0, sent: Int = 0, opened: Int = 0, minutesToOpen: [Int: Int] = [:]) {
        self.timing = timing
        self.readers = readers
        self.sent = sent
        self.opened = opened
        self.minutesToOpen = minutesToOpen
    }

    /// Groups the stores' rows — per timing, whether the reader was sent to, whole minutes to their
    /// first open (`nil`: none) and how many readers — sorted by timing.
    package static func merge(_ rows: [(timing: String, sent: Bool, minutes: Int?, readers: Int)]) -> [TimingReaders] {
        var groups: [String: TimingReaders] = [:]
        for row in rows {
            var group = groups[row.timing] ?? TimingReaders(timing: row.timing)
            group.readers += row.readers
            if row.sent {
                group.sent += row.readers
                if let minutes = row.minutes {
                    group.opened += row.readers
                    group.minutesToOpen[minutes, default: 0] += row.readers
                }
            }
            groups[row.timing] = group
        }
        return groups.values.sorted { $0.timing < $1.timing }
    }
}

/// What `digest report` and `digest run --status` read of a week delivered with `--deliver-at habit`;
/// both stores have it (``DigestOperatorViews/readersByTiming(week:)`` asks any store).
package protocol TimingViews: Sendable {
    /// A week's readers per delivery timing, sorted by timing; empty for a week without habit timing.
    /// Reads the outbox rows: a pruned week has none.
    func timingReaders(week: String) async throws -> [TimingReaders]
}

extension DigestOperatorViews {
    /// ``TimingViews/timingReaders(week:)`` of a store that has it (SQLite and PostgreSQL do); empty
    /// for one that does not.
    package func readersByTiming(week: String) async throws -> [TimingReaders] {
        guard let views = self as? any TimingViews else { return [] }
        return try await views.timingReaders(week: week)
    }
}
