/// The week's open rates as a chart (`digest report --chart FILE.svg`, the preview page's report): one
/// bar a variant (every platform and locale together), then one an arm of a split week, then one a
/// delivery timing group of a week with a control group (readers, not messages), each with its
/// 95% Wilson interval as a whisker and its figures written beside it. Plain SVG 1.1 with no script
/// or external reference, so a browser, an image viewer or a document can show it as it is.
package enum ReportChart {
    /// One bar's figures.
    package struct Bar: Sendable, Hashable {
        /// `variant` or `arm`.
        package var group: String
        package var label: String
        package var sent: Int
        package var opened: Int
        package var rate: Double
        package var low: Double
        package var high: Double
    }

    /// The bars of a report: its variants (alphabetically), then its arms; groups that sent nothing
    /// have no rate and no bar.
    package static func bars(_ report: DeliveryReport) -> [Bar] {
        var variants: [String: (sent: Int, opened: Int)] = [:]
        for row in report.rows {
            variants[row.variant, default: (0, 0)].sent += row.sent
            variants[row.variant, default: (0, 0)].opened += row.opened
        }
        var bars: [Bar] = []
        func add(_ group: String, _ label: String, sent: Int, opened: Int) {
            guard let interval = OpenRateStatistics.wilson(successes: opened, trials: sent) else { return }
            bars.append(
                Bar(group: group, label: label, sent: sent, opened: opened, rate: Double(opened) / Double(sent),
                    low: interval.low, high: interval.high))
        }
        for (variant, figures) in variants.sorted(by: { $0.key < $1.key }) {
            add("variant", variant, sent: figures.sent, opened: figures.opened)
        }
        for arm in report.split?.arms ?? [] {
            add("arm", arm.arm + " arm", sent: arm.sent, opened: arm.opened)
        }
        for group in report.timing?.groups ?? [] {
            add("timing", group.group, sent: group.sent, opened: group.opened)
        }
        return bars
    }

    static let width = 720
    static let plotLeft = 150
    static let plotRight = 470
    static let rowHeight = 30
    static let top = 56

    /// The axis' end: the highest interval's end rounded up to a tenth (at least 10%), so small
    /// rates are not a sliver.
    static func axisEnd(_ bars: [Bar]) -> Double {
        let highest = bars.map(\.high).max() ?? 0
        return min(1, max(0.1, (highest * 10).rounded(.up) / 10))
    }

    package static func svg(_ report: DeliveryReport) -> String {
        let bars = bars(report)
        let end = axisEnd(bars)
        let groups = Set(bars.map(\.group)).count
        let height = top + bars.count * rowHeight + groups * 22 + 40
        func x(_ rate: Double) -> String { DeliveryReport.fixed(Double(plotLeft) + rate / end * Double(plotRight - plotLeft), digits: 1) }
        func percent(_ value: Double) -> String { DeliveryReport.fixed(value * 100, digits: 1) }
        var svg = [
            ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(width)" height="\##(height)" viewBox="0 0 \##(width) \##(height)" font-family="sans-serif" font-size="13">"##,
            ##"<rect width="\##(width)" height="\##(height)" fill="#ffffff"/>"##,
            ##"<text x="12" y="24" font-size="15" font-weight="bold">\##(escape("Week \(report.week): open rate with its 95% interval"))</text>"##,
        ]
        if bars.isEmpty {
            svg.append(##"<text x="12" y="52" fill="#555555">no sent messages this week</text>"##)
        }
        // Grid and axis labels at every tenth (every 2% below 20%).
        let step = end <= 0.2 ? 0.02 : 0.1
        let plotBottom = height - 30
        var tick = 0.0
        while tick <= end + 1e-9 {
            svg.append(##"<line x1="\##(x(tick))" y1="\##(top - 8)" x2="\##(x(tick))" y2="\##(plotBottom)" stroke="#e3e3e3"/>"##)
            svg.append(##"<text x="\##(x(tick))" y="\##(plotBottom + 16)" text-anchor="middle" fill="#555555">\##(tickLabel(tick))%</text>"##)
            tick += step
        }
        var y = top
        var currentGroup: String?
        for bar in bars {
            if bar.group != currentGroup {
                currentGroup = bar.group
                svg.append(##"<text x="12" y="\##(y + 6)" font-weight="bold" fill="#333333">\##(heading(bar.group))</text>"##)
                y += 22
            }
            let middle = y + rowHeight / 2
            let figures = "\(percent(bar.rate))% (\(percent(bar.low))–\(percent(bar.high))%), \(bar.opened) of \(bar.sent)"
            svg.append(
                ##"<g class="bar" data-group="\##(escape(bar.group))" data-label="\##(escape(bar.label))" data-rate="\##(bar.rate)" data-low="\##(bar.low)" data-high="\##(bar.high)">"##)
            svg.append(##"<text x="\##(plotLeft - 8)" y="\##(middle + 4)" text-anchor="end">\##(escape(bar.label))</text>"##)
            svg.append(##"<rect x="\##(plotLeft)" y="\##(middle - 8)" width="\##(DeliveryReport.fixed(bar.rate / end * Double(plotRight - plotLeft), digits: 1))" height="16" fill="\##(color(bar.group))"/>"##)
            svg.append(##"<line x1="\##(x(bar.low))" y1="\##(middle)" x2="\##(x(bar.high))" y2="\##(middle)" stroke="#222222" stroke-width="1.5"/>"##)
            for end in [bar.low, bar.high] {
                svg.append(##"<line x1="\##(x(end))" y1="\##(middle - 6)" x2="\##(x(end))" y2="\##(middle + 6)" stroke="#222222" stroke-width="1.5"/>"##)
            }
            svg.append(##"<text x="\##(plotRight + 10)" y="\##(middle + 4)">\##(escape(figures))</text>"##)
            svg.append("</g>")
            y += rowHeight
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    static func heading(_ group: String) -> String {
        switch group {
        case "variant": "By variant"
        case "arm": "By arm (split week)"
        default: "By delivery timing (readers)"
        }
    }

    static func color(_ group: String) -> String {
        switch group {
        case "variant": "#4a7bd0"
        case "arm": "#d08a4a"
        default: "#4a9d6b"
        }
    }

    /// `20`, `2`, `12`: a tick's percent without a trailing `.0`.
    static func tickLabel(_ rate: Double) -> String {
        let text = DeliveryReport.fixed(rate * 100, digits: 1)
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// Text and attribute values as XML character data (HTML's too: the template comparison's page).
    package static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default:
                // XML 1.0 has no place for most control characters, escaped or not.
                if character.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\t" || $0 == "\n" }) { escaped.append(character) }
            }
        }
        return escaped
    }
}
