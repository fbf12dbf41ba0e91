/// `--deliver-at habit` and `--holdout`: the composer delivers each reader's message at their
/// habitual reading hour (``ReadingHabit``), keeping a stable control group at the fallback time.
package struct HabitDelivery: Sendable, Hashable {
    /// The readers kept at the fallback time although they have a habit (`nil`: none).
    package var control: ControlGroup?

    package init(control: ControlGroup? = nil) {
        self.control = control
    }
}

/// The local time a reader's message of the week was chosen to be due at, and why: what the outbox
/// keeps (`timing`, `due_local`) and the previews show.
package struct DeliveryChoice: Sendable, Hashable {
    /// `nil` in a run without `--deliver-at habit`.
    package var timing: DeliveryTiming?
    /// Minutes after local midnight of the delivery day.
    package var minuteOfDay: Int
    /// What the reader's reads of the digest's week and the three before said (zero without habit).
    package var tally: ReadingHabit.Tally

    package init(timing: DeliveryTiming?, minuteOfDay: Int, tally: ReadingHabit.Tally = .init()) {
        self.timing = timing
        self.minuteOfDay = minuteOfDay
        self.tally = tally
    }

    /// The outbox's `due_local`: `HH:MM`.
    package var dueLocal: String { clock(minuteOfDay) }

    /// Why, for editors and operators: `habit: 19:00 local from 14 reads on 6 days`, `fallback: 3
    /// reads`, `control group`; `nil` without habit timing.
    package var reason: String? {
        guard let timing else { return nil }
        switch timing {
        case .habit:
            let hour = tally.hour.map { clock($0 * 60) } ?? dueLocal
            // A habit inside the quiet hours is due at their edge: say both.
            let moved = hour == dueLocal ? "" : ", due at \(dueLocal) outside the quiet hours"
            return "habit: \(hour) local from \(Self.count(tally.reads, "read")) on \(Self.count(tally.days, "day"))\(moved)"
        case .fallback:
            guard tally.reads >= ReadingHabit.minimumReads else { return "fallback: \(Self.count(tally.reads, "read"))" }
            return "fallback: \(Self.count(tally.reads, "read")) on \(Self.count(tally.days, "day"))"
        case .control:
            return "control group"
        }
    }

    static func count(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }
}
