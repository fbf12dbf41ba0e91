package import DigestStore

/// A week's delivery and open figures (`digest report`): per variant × platform × locale, what was
/// sent (outbox messages in state `sent`), received, displayed, opened, dismissed and acted on, the
/// open rate opened / sent with its 95% Wilson interval; for a split week (`--policy split:50`), the
/// arms' open rates and their difference with a two-sided pooled two-proportion z-test; for a week
/// delivered at readers' habits with a control group, the timing groups' readers and habit − control.
///
/// ```swift
/// let report = DeliveryReport(week: "2026-W47", counts: try await database.eventCounts(week: "2026-W47"))
/// print(report.text)
/// ```
package struct DeliveryReport: Sendable, Hashable, Codable {
    /// One group's figures.
    package struct Row: Sendable, Hashable, Codable {
        package var variant: String
        package var platform: String
        /// The template locale; `nil` for messages enqueued before the outbox kept it.
        package var locale: String?
        package var sent: Int
        package var received: Int
        package var displayed: Int
        package var opened: Int
        package var dismissed: Int
        package var actions: Int
        /// opened / sent, `nil` when nothing was sent.
        package var openRate: Double?
        /// The 95% Wilson interval of ``openRate``.
        package var openRateLow: Double?
        package var openRateHigh: Double?

        init(_ counts: EventCounts, locale: String?) {
            variant = counts.variant
            platform = counts.platform
            self.locale = locale
            sent = counts.sent
            received = counts.received
            displayed = counts.displayed
            opened = counts.opened
            dismissed = counts.dismissed
            actions = counts.actions
            openRate = sent > 0 ? Double(opened) / Double(sent) : nil
            let interval = OpenRateStatistics.wilson(successes: opened, trials: sent)
            openRateLow = interval?.low
            openRateHigh = interval?.high
        }

        enum CodingKeys: String, CodingKey {
            case variant, platform, locale, sent, received, displayed, opened, dismissed, actions
            case openRate = "open_rate", openRateLow = "open_rate_low", openRateHigh = "open_rate_high"
        }

        /// Every key, `null` for an unknown locale or a rate of nothing sent.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(variant, forKey: .variant)
            try container.encode(platform, forKey: .platform)
            try container.encode(locale, forKey: .locale)
            try container.encode(sent, forKey: .sent)
            try container.encode(received, forKey: .received)
            try container.encode(displayed, forKey: .displayed)
            try container.encode(opened, forKey: .opened)
            try container.encode(dismissed, forKey: .dismissed)
            try container.encode(actions, forKey: .actions)
            try container.encode(openRate, forKey: .openRate)
            try container.encode(openRateLow, forKey: .openRateLow)
            try container.encode(openRateHigh, forKey: .openRateHigh)
        }
    }

    /// One arm of a split week, all its variants, platforms and locales together.
    package struct Arm: Sendable, Hashable, Codable {
        package var arm: String
        package var sent: Int
        package var opened: Int
        package var openRate: Double?
        package var openRateLow: Double?
        package var openRateHigh: Double?

        enum CodingKeys: String, CodingKey {
            case arm, sent, opened
            case openRate = "open_rate", openRateLow = "open_rate_low", openRateHigh = "open_rate_high"
        }
    }

    /// A split week's comparison: the image arm against the text arm.
    package struct Split: Sendable, Hashable, Codable {
        package var arms: [Arm]
        /// The image arm's open rate minus the text arm's (`nil` unless both arms sent something).
        package var difference: Double?
        /// The pooled two-proportion z statistic and its two-sided p-value.
        package var z: Double?
        package var pValue: Double?

        enum CodingKeys: String, CodingKey {
            case arms, difference, z
            case pValue = "p_value"
        }
    }

    package var week: String
    /// Sorted by variant, platform, locale.
    package var rows: [Row]
    /// `nil` unless the week's messages were split into arms.
    package var split: Split?
    /// `--deliver-at habit` with a control group: the timing groups and habit − control (`nil`, and
    /// absent from the JSON, without a control group).
    package var timing: Timing?
    /// `fewer`, `pause` and `off` presses per 1,000 messages sent, per variant × platform (and arm /
    /// timing group where the week has them), three rows a group.
    package var actions: [ActionRow]
    /// A week with a control group: the readers who paused or stopped with a button, habit − control
    /// (`nil`, and absent from the JSON, without a control group).
    package var stopped: Stopped?

    package init(
        week: String, counts: [EventCounts], timing: [TimingReaders] = [], actions: [ActionCounts] = [], stopped: [StoppedReaders] = []
    ) {
        self.week = week
        self.timing = Timing(timing)
        self.actions = ActionRow.rows(actions)
        self.stopped = Stopped(stopped)
        var groups: [[String]: EventCounts] = [:]
        var arms: [String: (sent: Int, opened: Int)] = [:]
        for item in counts {
            let key = [item.variant, item.platform, item.locale]
            var group = groups[key] ?? EventCounts(variant: item.variant, platform: item.platform, locale: item.locale, arm: "")
            group.sent += item.sent
            group.received += item.received
            group.displayed += item.displayed
            group.opened += item.opened
            group.dismissed += item.dismissed
            group.actions += item.actions
            groups[key] = group
            if !item.arm.isEmpty {
                arms[item.arm, default: (0, 0)].sent += item.sent
                arms[item.arm, default: (0, 0)].opened += item.opened
            }
        }
        rows = groups.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { Row($0.value, locale: $0.value.locale.isEmpty ? nil : $0.value.locale) }
        guard !arms.isEmpty else {
            split = nil
            return
        }
        let armRows = arms.sorted { $0.key < $1.key }.map { name, figures in
            let interval = OpenRateStatistics.wilson(successes: figures.opened, trials: figures.sent)
            return Arm(
                arm: name, sent: figures.sent, opened: figures.opened,
                openRate: figures.sent > 0 ? Double(figures.opened) / Double(figures.sent) : nil,
                openRateLow: interval?.low, openRateHigh: interval?.high)
        }
        var split = Split(arms: armRows)
        if let image = arms["image"], let text = arms["text"],
            let test = OpenRateStatistics.twoProportionTest(x1: image.opened, n1: image.sent, x2: text.opened, n2: text.sent)
        {
            split.difference = Double(image.opened) / Double(image.sent) - Double(text.opened) / Double(text.sent)
            split.z = test.z
            split.pValue = test.pValue
        }
        self.split = split
    }

    /// The report as a table, for a terminal.
    package var text: String {
        let percent = Self.percent, interval = Self.percentInterval
        let header = ["variant", "platform", "locale", "sent", "received", "displayed", "opened", "dismissed", "actions", "open rate (95% CI)"]
        var table = [header]
        for row in rows {
            table.append([
                row.variant, row.platform, row.locale ?? "-", String(row.sent), String(row.received), String(row.displayed),
                String(row.opened), String(row.dismissed), String(row.actions), percent(row.openRate) + interval(row.openRateLow, row.openRateHigh),
            ])
        }
        let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        var lines = ["week \(week): \(rows.map(\.sent).reduce(0, +)) sent, \(rows.map(\.opened).reduce(0, +)) opened"]
        if rows.isEmpty { lines.append("no sent messages and no events for this week") }
        for line in rows.isEmpty ? [] : table {
            lines.append(
                line.enumerated().map { column, cell in
                    let pad = String(repeating: " ", count: widths[column] - cell.count)
                    return (3...8).contains(column) ? pad + cell : cell + pad
                }.joined(separator: "  ").trimmingTrailingSpaces())
        }
        if let timing { lines.append(contentsOf: timing.lines) }
        lines.append(contentsOf: Self.actionLines(actions))
        if let stopped { lines.append(contentsOf: stopped.lines) }
        if let split {
            lines.append("split:")
            for arm in split.arms {
                lines.append("  \(arm.arm) arm: \(arm.opened) of \(arm.sent) opened, \(percent(arm.openRate))\(interval(arm.openRateLow, arm.openRateHigh))")
            }
            if let difference = split.difference, let z = split.z, let p = split.pValue {
                let sign = difference >= 0 ? "+" : "−"
                lines.append(
                    "  image − text: \(sign)\(Self.fixed(abs(difference) * 100, digits: 1)) points, z = \(Self.fixed(z, digits: 2)), two-sided p = \(Self.fixed(p, digits: 4))")
            } else {
                lines.append("  no comparison: an arm sent nothing")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `value` with `digits` decimals, rounded half away from zero.
    /// A proportion as a percentage, `12.3%`; `-` without one.
    static func percent(_ value: Double?) -> String {
        guard let value else { return "-" }
        return fixed(value * 100, digits: 1) + "%"
    }

    /// A proportion's interval as percentages, ` (10.1–14.6%)`; nothing without one.
    static func percentInterval(_ low: Double?, _ high: Double?) -> String {
        guard let low, let high else { return "" }
        return " (\(fixed(low * 100, digits: 1))–\(fixed(high * 100, digits: 1))%)"
    }

    /// A difference of proportions in percentage points with its sign, `+1.2` or `−0.4`.
    static func points(_ value: Double) -> String {
        (value >= 0 ? "+" : "−") + fixed(abs(value) * 100, digits: 1)
    }

    static func fixed(_ value: Double, digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int(scaled / scale)
        let fraction = Int(scaled) - whole * Int(scale)
        let fractionText = String(fraction)
        let padded = String(repeating: "0", count: max(0, digits - fractionText.count)) + fractionText
        return (value < 0 && scaled > 0 ? "-" : "") + String(whole) + (digits > 0 ? "." + padded : "")
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
