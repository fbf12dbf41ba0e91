package import DigestStore

/// The buttons that change preferences (docs/009, "The report"): presses per 1,000 messages sent,
/// and for a week with a control group the share of readers who paused or stopped, habit − control.
extension DeliveryReport {
    /// One button's presses in one group of messages (variant × platform, and arm / timing group
    /// where the week has them).
    package struct ActionRow: Sendable, Hashable, Codable {
        package var variant: String
        package var platform: String
        /// The A/B arm; `nil` (and absent from the JSON) outside a split week.
        package var arm: String?
        /// The delivery timing group; `nil` (and absent from the JSON) without `--deliver-at habit`.
        package var group: String?
        /// `fewer`, `pause` or `off`.
        package var action: String
        package var presses: Int
        package var sent: Int
        /// presses / sent × 1,000, `nil` when nothing was sent.
        package var per1000: Double?
        /// The 95% Wilson interval of presses / sent, × 1,000.
        package var per1000Low: Double?
        package var per1000High: Double?

        package init(variant: String, platform: String, arm: String?, group: String?, action: String, presses: Int, sent: Int) {
            self.variant = variant
            self.platform = platform
            self.arm = arm
            self.group = group
            self.action = action
            self.presses = presses
            self.sent = sent
            per1000 = sent > 0 ? Double(presses) / Double(sent) * 1000 : nil
            let interval = OpenRateStatistics.wilson(successes: min(presses, sent), trials: sent)
            per1000Low = interval.map { $0.low * 1000 }
            per1000High = interval.map { $0.high * 1000 }
        }

        enum CodingKeys: String, CodingKey {
            case variant, platform, arm, group, action, presses, sent
            case per1000 = "per_1000", per1000Low = "per_1000_low", per1000High = "per_1000_high"
        }

        /// Every key, `null` for a rate of nothing sent; `arm` and `group` only where the week has them.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(variant, forKey: .variant)
            try container.encode(platform, forKey: .platform)
            try container.encodeIfPresent(arm, forKey: .arm)
            try container.encodeIfPresent(group, forKey: .group)
            try container.encode(action, forKey: .action)
            try container.encode(presses, forKey: .presses)
            try container.encode(sent, forKey: .sent)
            try container.encode(per1000, forKey: .per1000)
            try container.encode(per1000Low, forKey: .per1000Low)
            try container.encode(per1000High, forKey: .per1000High)
        }

        /// The rows of the stores' groups: three a group (`fewer`, `pause`, `off`, in that order), sorted
        /// by variant, platform, arm and timing group.
        static func rows(_ counts: [ActionCounts]) -> [ActionRow] {
            let split = counts.contains { !$0.arm.isEmpty }
            let timed = counts.contains { !$0.timing.isEmpty }
            return counts.sorted { $0.key.lexicographicallyPrecedes($1.key) }.flatMap { group in
                ActionCounts.actions.map { action in
                    ActionRow(
                        variant: group.variant, platform: group.platform, arm: split ? group.arm : nil, group: timed ? group.timing : nil,
                        action: action, presses: group.presses[action] ?? 0, sent: group.sent)
                }
            }
        }
    }

    /// One timing group's readers sent a message and those of them who paused or stopped.
    package struct StoppedGroup: Sendable, Hashable, Codable {
        /// `habit`, `control` or `fallback`.
        package var group: String
        package var readers: Int
        package var stopped: Int
        package var rate: Double?
        package var rateLow: Double?
        package var rateHigh: Double?

        init(_ readers: StoppedReaders) {
            group = readers.timing
            self.readers = readers.readers
            stopped = readers.stopped
            rate = self.readers > 0 ? Double(stopped) / Double(self.readers) : nil
            let interval = OpenRateStatistics.wilson(successes: stopped, trials: self.readers)
            rateLow = interval?.low
            rateHigh = interval?.high
        }

        enum CodingKeys: String, CodingKey {
            case group, readers, stopped, rate
            case rateLow = "rate_low", rateHigh = "rate_high"
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(group, forKey: .group)
            try container.encode(readers, forKey: .readers)
            try container.encode(stopped, forKey: .stopped)
            try container.encode(rate, forKey: .rate)
            try container.encode(rateLow, forKey: .rateLow)
            try container.encode(rateHigh, forKey: .rateHigh)
        }
    }

    /// A week with a control group: per timing group the share of readers who paused or stopped the
    /// digest with a button within 7 days of their due time, and habit − control with its 95% interval
    /// (Newcombe's hybrid score), `null` while either group has fewer than
    /// ``DeliveryReport/minimumTimingReaders`` readers sent to.
    package struct Stopped: Sendable, Hashable, Codable {
        package var groups: [StoppedGroup]
        package var difference: Double?
        package var differenceLow: Double?
        package var differenceHigh: Double?

        /// `nil` for a week without a control group.
        init?(_ readers: [StoppedReaders]) {
            guard readers.contains(where: { $0.timing == "control" && $0.readers > 0 }) else { return nil }
            groups = readers.sorted { DeliveryReport.timingGroupOrder($0.timing, $1.timing) }.map(StoppedGroup.init)
            guard let habit = groups.first(where: { $0.group == "habit" }), let control = groups.first(where: { $0.group == "control" }),
                min(habit.readers, control.readers) >= DeliveryReport.minimumTimingReaders,
                let interval = OpenRateStatistics.newcombe(x1: habit.stopped, n1: habit.readers, x2: control.stopped, n2: control.readers)
            else { return }
            difference = Double(habit.stopped) / Double(habit.readers) - Double(control.stopped) / Double(control.readers)
            differenceLow = interval.low
            differenceHigh = interval.high
        }

        enum CodingKeys: String, CodingKey {
            case groups, difference
            case differenceLow = "difference_low", differenceHigh = "difference_high"
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(groups, forKey: .groups)
            try container.encode(difference, forKey: .difference)
            try container.encode(differenceLow, forKey: .differenceLow)
            try container.encode(differenceHigh, forKey: .differenceHigh)
        }

        var lines: [String] {
            let percent = DeliveryReport.percent, points = DeliveryReport.points
            var lines = ["paused or stopped with a button within 7 days of the due time (readers, each once):"]
            let width = groups.map(\.group.count).max() ?? 0
            for group in groups {
                let interval = DeliveryReport.percentInterval(group.rateLow, group.rateHigh)
                let pad = String(repeating: " ", count: width - group.group.count)
                lines.append("  \(group.group):\(pad) \(group.stopped) of \(group.readers) stopped, \(percent(group.rate))\(interval)")
            }
            if let difference, let differenceLow, let differenceHigh {
                lines.append("  habit − control: \(points(difference)) points (95% CI \(points(differenceLow)) to \(points(differenceHigh)))")
            } else {
                lines.append("  habit − control: not enough data (fewer than \(DeliveryReport.minimumTimingReaders) readers sent to in a group)")
            }
            return lines
        }
    }

    /// The presses as a table: a line per group and button, presses per 1,000 sent with its interval.
    static func actionLines(_ rows: [ActionRow]) -> [String] {
        guard rows.contains(where: { $0.presses > 0 }) else { return [] }
        var header = ["variant", "platform"]
        let split = rows.contains { $0.arm != nil }, timed = rows.contains { $0.group != nil }
        if split { header.append("arm") }
        if timed { header.append("group") }
        header += ["action", "presses", "sent", "per 1,000", "95% interval"]
        let numeric = header.count - 4
        var table = [header]
        for row in rows {
            var line = [row.variant, row.platform]
            if split { line.append(row.arm ?? "") }
            if timed { line.append(row.group ?? "") }
            line += [
                row.action, String(row.presses), String(row.sent), row.per1000.map { fixed($0, digits: 1) } ?? "-",
                row.per1000Low.flatMap { low in row.per1000High.map { "\(fixed(low, digits: 1))–\(fixed($0, digits: 1))" } } ?? "",
            ]
            table.append(line)
        }
        let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        var lines = ["button presses per 1,000 sent:"]
        for line in table {
            let cells = line.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return (numeric..<numeric + 3).contains(column) ? pad + cell : cell + pad
            }
            var text = "  " + cells.joined(separator: "  ")
            while text.last == " " { text.removeLast() }
            lines.append(text)
        }
        return lines
    }
}
