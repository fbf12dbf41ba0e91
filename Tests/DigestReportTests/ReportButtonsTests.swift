import DigestReport
import DigestStore
import Foundation
import Testing

/// `digest report`'s figures of the buttons that change preferences: presses per 1,000 sent, and
/// for a week with a control group the readers who paused or stopped, habit − control.
@Suite struct ReportButtonsTests {
    static func json(_ report: DeliveryReport) throws -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try #require(try JSONSerialization.jsonObject(with: encoder.encode(report)) as? [String: Any])
    }

    @Test func aSplitWeekHasArmsAndNoGroups() throws {
        let counts = [
            ActionCounts(variant: "Image", platform: "ios", arm: "image", sent: 400, presses: ["fewer": 4, "off": 1]),
            ActionCounts(variant: "BigText", platform: "android", arm: "text", sent: 250, presses: ["pause": 2]),
        ]
        let report = DeliveryReport(week: "2026-W47", counts: [], actions: counts)
        #expect(report.actions.map(\.variant) == ["BigText", "BigText", "BigText", "Image", "Image", "Image"])
        #expect(report.actions.map(\.action) == ["fewer", "pause", "off", "fewer", "pause", "off"])
        #expect(report.actions.map(\.presses) == [0, 2, 0, 4, 0, 1])
        let fewer = report.actions[3]
        let wilson = try #require(OpenRateStatistics.wilson(successes: 4, trials: 400))
        #expect(fewer.per1000 == 10 && fewer.per1000Low == wilson.low * 1000 && fewer.per1000High == wilson.high * 1000)
        #expect(fewer.arm == "image" && fewer.group == nil)
        let object = try Self.json(report)
        let rows = try #require(object["actions"] as? [[String: Any]])
        #expect(Set(rows[0].keys) == ["variant", "platform", "arm", "action", "presses", "sent", "per_1000", "per_1000_low", "per_1000_high"])
        #expect(object["stopped"] == nil)
        let text = report.text
        #expect(text.contains("button presses per 1,000 sent:"), "\(text)")
        #expect(text.contains("  variant  platform  arm    action  presses  sent  per 1,000  95% interval"), "\(text)")
        #expect(text.contains("  Image    ios       image  fewer         4   400       10.0  "), "\(text)")
    }

    @Test func withoutPressesThereIsNoTableAndNothingSentHasNoRate() throws {
        let quiet = DeliveryReport(week: "2026-W47", counts: [], actions: [ActionCounts(variant: "BigText", platform: "android", sent: 10)])
        #expect(quiet.actions.count == 3 && quiet.actions.allSatisfy { $0.per1000 == 0 && $0.arm == nil && $0.group == nil })
        #expect(!quiet.text.contains("button presses"))
        // Presses on messages whose sent rows are gone: counted, no rate.
        let orphan = DeliveryReport(week: "2026-W47", counts: [], actions: [ActionCounts(variant: "BigText", platform: "web", presses: ["off": 1])])
        #expect(orphan.actions[2].presses == 1 && orphan.actions[2].per1000 == nil && orphan.actions[2].per1000Low == nil)
        let row = try #require((try Self.json(orphan)["actions"] as? [[String: Any]])?[2])
        #expect(row["per_1000"] is NSNull && row["per_1000_high"] is NSNull)
    }

    @Test func habitAgainstControl() throws {
        let readers = [
            StoppedReaders(timing: "fallback", readers: 40, stopped: 1),
            StoppedReaders(timing: "control", readers: 200, stopped: 4),
            StoppedReaders(timing: "habit", readers: 800, stopped: 24),
        ]
        let report = DeliveryReport(week: "2026-W47", counts: [], stopped: readers)
        let stopped = try #require(report.stopped)
        #expect(stopped.groups.map(\.group) == ["habit", "control", "fallback"])
        #expect(stopped.groups[0].rate == 0.03 && stopped.groups[1].rate == 0.02)
        let wilson = try #require(OpenRateStatistics.wilson(successes: 24, trials: 800))
        #expect(stopped.groups[0].rateLow == wilson.low && stopped.groups[0].rateHigh == wilson.high)
        let newcombe = try #require(OpenRateStatistics.newcombe(x1: 24, n1: 800, x2: 4, n2: 200))
        #expect(abs(try #require(stopped.difference) - 0.01) < 1e-12)
        #expect(stopped.differenceLow == newcombe.low && stopped.differenceHigh == newcombe.high)
        let object = try #require(try Self.json(report)["stopped"] as? [String: Any])
        #expect(Set(object.keys) == ["groups", "difference", "difference_low", "difference_high"])
        let group = try #require((object["groups"] as? [[String: Any]])?.first)
        #expect(Set(group.keys) == ["group", "readers", "stopped", "rate", "rate_low", "rate_high"])
        #expect(report.text.contains("  habit:    24 of 800 stopped, 3.0% ("), "\(report.text)")
        #expect(report.text.contains("  habit − control: +1.0 points (95% CI "), "\(report.text)")

        // Below 100 readers a group: the groups, no comparison.
        var small = readers
        small[1].readers = 99
        let few = try #require(DeliveryReport(week: "2026-W47", counts: [], stopped: small).stopped)
        #expect(few.difference == nil && few.differenceLow == nil && few.groups.count == 3)
        // No control group: no "stopped" at all.
        #expect(DeliveryReport(week: "2026-W47", counts: [], stopped: [readers[2]]).stopped == nil)
    }

    @Test func theStoresRowsMerge() {
        let counts = ActionCounts.merge([
            ("", ["BigText", "android", "", "habit"], 7), ("pause", ["BigText", "android", "", "habit"], 2),
            ("", ["BigText", "android", "", "habit"], 3), ("", ["BigText", "android", "", ""], 5),
        ])
        #expect(counts == [
            ActionCounts(variant: "BigText", platform: "android", sent: 5),
            ActionCounts(variant: "BigText", platform: "android", timing: "habit", sent: 10, presses: ["pause": 2]),
        ])
        let readers = StoppedReaders.merge([("habit", 90, 6), ("control", 1, 1), ("habit", 10, 4), ("control", 99, 0)])
        #expect(readers == [StoppedReaders(timing: "control", readers: 100, stopped: 1), StoppedReaders(timing: "habit", readers: 100, stopped: 10)])
    }
}
