package import DigestStore

/// `--deliver-at habit` with a control group: readers at their reading hour against readers kept at
/// the fallback time (docs/009, "Delivery timing").
extension DeliveryReport {
    /// Readers below this many sent to in the habit or the control group make no comparison.
    package static let minimumTimingReaders = 100

    /// One timing group's readers: a reader counts once, whatever their devices.
    package struct TimingGroup: Sendable, Hashable, Codable {
        /// `habit`, `control` or `fallback`.
        package var group: String
        /// Readers with a message sent.
        package var sent: Int
        /// Of those, readers who opened one.
        package var opened: Int
        package var openRate: Double?
        package var openRateLow: Double?
        package var openRateHigh: Double?
        /// The median of the whole minutes from each opener's due time to their first `opened`.
        package var medianMinutesToOpen: Double?

        init(_ readers: TimingReaders) {
            group = readers.timing
            sent = readers.sent
            opened = readers.opened
            openRate = sent > 0 ? Double(opened) / Double(sent) : nil
            let interval = OpenRateStatistics.wilson(successes: opened, trials: sent)
            openRateLow = interval?.low
            openRateHigh = interval?.high
            medianMinutesToOpen = Self.median(readers.minutesToOpen)
        }

        /// The median of a histogram (value → count): the middle value, or the mean of the two middle ones.
        package static func median(_ histogram: [Int: Int]) -> Double? {
            let total = histogram.values.reduce(0, +)
            guard total > 0 else { return nil }
            let sorted = histogram.sorted { $0.key < $1.key }
            func value(at position: Int) -> Int {
                var seen = 0
                for (minutes, count) in sorted {
                    seen += count
                    if position < seen { return minutes }
                }
                return sorted[sorted.count - 1].key
            }
            let lower = value(at: (total - 1) / 2), upper = value(at: total / 2)
            return Double(lower + upper) / 2
        }

        enum CodingKeys: String, CodingKey {
            case group, sent, opened
            case openRate = "open_rate", openRateLow = "open_rate_low", openRateHigh = "open_rate_high"
            case medianMinutesToOpen = "median_minutes_to_open"
        }

        /// Every key, `null` where there is no figure.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(group, forKey: .group)
            try container.encode(sent, forKey: .sent)
            try container.encode(opened, forKey: .opened)
            try container.encode(openRate, forKey: .openRate)
            try container.encode(openRateLow, forKey: .openRateLow)
            try container.encode(openRateHigh, forKey: .openRateHigh)
            try container.encode(medianMinutesToOpen, forKey: .medianMinutesToOpen)
        }
    }

    /// Whether timing group `a` comes before `b` in the report: habit, control, fallback, then any
    /// other by name.
    static func timingGroupOrder(_ a: String, _ b: String) -> Bool {
        let order = ["habit", "control", "fallback"]
        return (order.firstIndex(of: a) ?? order.count, a) < (order.firstIndex(of: b) ?? order.count, b)
    }

    /// The week's timing groups (habit, control, fallback) and habit − control: the difference of
    /// their open rates with its 95% interval (Newcombe's hybrid score) and the pooled two-proportion
    /// z-test; the comparison is `null` while either group has fewer than
    /// ``DeliveryReport/minimumTimingReaders`` readers sent to.
    package struct Timing: Sendable, Hashable, Codable {
        package var groups: [TimingGroup]
        package var difference: Double?
        package var differenceLow: Double?
        package var differenceHigh: Double?
        package var z: Double?
        package var pValue: Double?

        /// `nil` for a week without a control group.
        init?(_ readers: [TimingReaders]) {
            guard readers.contains(where: { $0.timing == "control" && $0.readers > 0 }) else { return nil }
            groups = readers.sorted { DeliveryReport.timingGroupOrder($0.timing, $1.timing) }.map(TimingGroup.init)
            guard let habit = groups.first(where: { $0.group == "habit" }), let control = groups.first(where: { $0.group == "control" }),
                min(habit.sent, control.sent) >= DeliveryReport.minimumTimingReaders,
                let interval = OpenRateStatistics.newcombe(x1: habit.opened, n1: habit.sent, x2: control.opened, n2: control.sent),
                let test = OpenRateStatistics.twoProportionTest(x1: habit.opened, n1: habit.sent, x2: control.opened, n2: control.sent)
            else { return }
            difference = Double(habit.opened) / Double(habit.sent) - Double(control.opened) / Double(control.sent)
            differenceLow = interval.low
            differenceHigh = interval.high
            z = test.z
            pValue = test.pValue
        }

        enum CodingKeys: String, CodingKey {
            case groups, difference, z
            case differenceLow = "difference_low", differenceHigh = "difference_high", pValue = "p_value"
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(groups, forKey: .groups)
            try container.encode(difference, forKey: .difference)
            try container.encode(differenceLow, forKey: .differenceLow)
            try container.encode(differenceHigh, forKey: .differenceHigh)
            try container.encode(z, forKey: .z)
            try container.encode(pValue, forKey: .pValue)
        }

        /// The report's lines for the comparison.
        var lines: [String] {
            let percent = DeliveryReport.percent, points = DeliveryReport.points
            var lines = ["delivery timing (readers, each once):"]
            let width = groups.map(\.group.count).max() ?? 0
            for group in groups {
                let interval = DeliveryReport.percentInterval(group.openRateLow, group.openRateHigh)
                let median = group.medianMinutesToOpen.map { ", median \(DeliveryReport.fixed($0, digits: 1)) min from due to open" } ?? ""
                let pad = String(repeating: " ", count: width - group.group.count)
                lines.append("  \(group.group):\(pad) \(group.opened) of \(group.sent) opened, \(percent(group.openRate))\(interval)\(median)")
            }
            if let difference, let differenceLow, let differenceHigh, let z, let pValue {
                lines.append(
                    "  habit − control: \(points(difference)) points (95% CI \(points(differenceLow)) to \(points(differenceHigh))), z = \(DeliveryReport.fixed(z, digits: 2)), two-sided p = \(DeliveryReport.fixed(pValue, digits: 4))"
                )
            } else {
                lines.append("  habit − control: not enough data (fewer than \(DeliveryReport.minimumTimingReaders) readers sent to in a group)")
            }
            lines.append("  fallback readers (too few reads for a habit) are not in the comparison")
            return lines
        }
    }
}
