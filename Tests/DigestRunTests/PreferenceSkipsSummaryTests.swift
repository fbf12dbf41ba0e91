import DigestCore
import DigestRun
import Foundation
import Testing

/// The preferences' skips reach the run summary as every skip does: counted by the composer under
/// `skipped`, printed, and in `--report` JSON (the same counters `run --status` and `digest report
/// --json` read back from the store).
@Suite struct PreferenceSkipsSummaryTests {
    @Test func theSummaryPrintsAndWritesThePreferencesSkips() throws {
        var counters = RunCounters()
        counters.users = 5
        counters.digested = 2
        counters.skipped = ["opted_out": 1, "not_this_week": 1, "paused": 1]
        let encoded = String(decoding: try JSONEncoder().encode(counters), as: UTF8.self)
        let json = #"{"week":"2026-W47","sendAt":"local","resumedFromCursor":0,"wasComplete":false,"seconds":1,"usersPerSecond":5,"#
            + #""thisRun":\#(encoded),"weekTotals":\#(encoded),"images":{}}"#
        let summary = try JSONDecoder().decode(RunSummary.self, from: Data(json.utf8))
        #expect(summary.lines().contains("users: 5 looked at, 2 digested (0 re-engagement), skipped: not_this_week 1, opted_out 1, paused 1"))
        let report = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any])
        let skipped = (report["thisRun"] as? [String: Any])?["skipped"] as? [String: Int]
        #expect(skipped == ["opted_out": 1, "not_this_week": 1, "paused": 1])
        #expect(SkipReason(rawValue: "not_this_week") == .notThisWeek && SkipReason(rawValue: "paused") == .paused)
    }
}
