import DigestReport
import DigestStore
import Foundation
import Testing

/// `digest report`'s timing comparison of a week delivered at readers' habits with a control group.
@Suite struct ReportTimingTests {
    static let groups = [
        TimingReaders(timing: "habit", readers: 1000, sent: 900, opened: 270, minutesToOpen: [3: 100, 10: 70, 40: 100]),
        TimingReaders(timing: "control", readers: 120, sent: 110, opened: 22, minutesToOpen: [60: 11, 90: 11]),
        TimingReaders(timing: "fallback", readers: 80, sent: 80, opened: 8, minutesToOpen: [5: 8]),
    ]

    @Test func theGroupsAndHabitAgainstControl() throws {
        let report = DeliveryReport(week: "2026-W47", counts: [], timing: Self.groups.reversed())
        let timing = try #require(report.timing)
        #expect(timing.groups.map(\.group) == ["habit", "control", "fallback"])
        #expect(timing.groups.map(\.sent) == [900, 110, 80] && timing.groups.map(\.opened) == [270, 22, 8])
        #expect(timing.groups.map(\.medianMinutesToOpen) == [10, 75, 5])
        let habit = timing.groups[0]
        let wilson = try #require(OpenRateStatistics.wilson(successes: 270, trials: 900))
        #expect(habit.openRate == 0.3 && habit.openRateLow == wilson.low && habit.openRateHigh == wilson.high)
        let newcombe = try #require(OpenRateStatistics.newcombe(x1: 270, n1: 900, x2: 22, n2: 110))
        let test = try #require(OpenRateStatistics.twoProportionTest(x1: 270, n1: 900, x2: 22, n2: 110))
        #expect(abs(try #require(timing.difference) - 0.1) < 1e-12)
        #expect(timing.differenceLow == newcombe.low && timing.differenceHigh == newcombe.high)
        #expect(timing.z == test.z && timing.pValue == test.pValue)
        let text = report.text
        #expect(text.contains("  habit:    270 of 900 opened, 30.0% (27.1–33.1%), median 10.0 min from due to open"), "\(text)")
        #expect(text.contains("  habit − control: +10.0 points (95% CI \(sign(newcombe.low)) to \(sign(newcombe.high))), z = "), "\(text)")
    }

    func sign(_ value: Double) -> String {
        (value >= 0 ? "+" : "−") + String(format: "%.1f", abs(value) * 100)
    }

    @Test func theJSONKeysAreTheIssues() throws {
        let report = DeliveryReport(week: "2026-W47", counts: [], timing: Self.groups)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let object = try #require(try JSONSerialization.jsonObject(with: encoder.encode(report)) as? [String: Any])
        let timing = try #require(object["timing"] as? [String: Any])
        #expect(Set(timing.keys) == ["groups", "difference", "difference_low", "difference_high", "z", "p_value"])
        let group = try #require((timing["groups"] as? [[String: Any]])?.first)
        #expect(Set(group.keys) == ["group", "sent", "opened", "open_rate", "open_rate_low", "open_rate_high", "median_minutes_to_open"])
        #expect(group["group"] as? String == "habit" && group["median_minutes_to_open"] as? Double == 10)
        // No control group: no "timing" at all.
        let without = DeliveryReport(week: "2026-W47", counts: [], timing: [Self.groups[0], Self.groups[2]])
        #expect(without.timing == nil)
        let plain = try #require(try JSONSerialization.jsonObject(with: encoder.encode(without)) as? [String: Any])
        #expect(plain["timing"] == nil)
        #expect(!without.text.contains("timing"))
    }

    @Test func belowAHundredReadersAGroupThereIsNotEnoughData() throws {
        var small = Self.groups
        small[1].sent = 99
        small[1].opened = 10
        let report = DeliveryReport(week: "2026-W47", counts: [], timing: small)
        let timing = try #require(report.timing)
        #expect(timing.difference == nil && timing.z == nil && timing.differenceLow == nil)
        #expect(timing.groups[1].openRate == 10.0 / 99)
        #expect(report.text.contains("habit − control: not enough data"))
        let encoder = JSONEncoder()
        let object = try #require(try JSONSerialization.jsonObject(with: encoder.encode(report)) as? [String: Any])
        #expect((object["timing"] as? [String: Any])?["difference"] is NSNull)
    }

    @Test func medians() {
        #expect(DeliveryReport.TimingGroup.median([:]) == nil)
        #expect(DeliveryReport.TimingGroup.median([7: 1]) == 7)
        #expect(DeliveryReport.TimingGroup.median([1: 1, 4: 1]) == 2.5)
        #expect(DeliveryReport.TimingGroup.median([1: 2, 4: 1, 9: 1]) == 2.5)
        #expect(DeliveryReport.TimingGroup.median([1: 2, 4: 3]) == 4)
    }

    @Test func theChartHasABarPerTimingGroup() {
        let report = DeliveryReport(week: "2026-W47", counts: [], timing: Self.groups)
        let bars = ReportChart.bars(report).filter { $0.group == "timing" }
        #expect(bars.map(\.label) == ["habit", "control", "fallback"])
        #expect(ReportChart.svg(report).contains("By delivery timing (readers)"))
    }
}
